"""Today's spend per scope and the per-minute message counters. Contract tests run on the
Redis stores (fakeredis) and on their in-memory twins."""

from __future__ import annotations

import pytest

from harness.agent.budget_limits import raise_today
from harness.records.rate import WINDOW_MS, MemoryRateWindows, RateWindows, RedisRateWindows
from harness.records.spend import MemorySpendStore, RedisSpendStore, ScopeSpend, SpendStore
from harness.runtime import Runtime

DAY = "2026-05-01"


@pytest.fixture(params=["redis", "memory"])
def spend(request: pytest.FixtureRequest, runtime: Runtime) -> SpendStore:
    """The spend store, once on Redis (fakeredis) and once in memory."""
    if request.param == "redis":
        return RedisSpendStore(runtime.redis, runtime.keys)
    return MemorySpendStore()


@pytest.fixture(params=["redis", "memory"])
def rates(request: pytest.FixtureRequest, runtime: Runtime) -> RateWindows:
    """The rate counters, once on Redis (fakeredis) and once in memory."""
    if request.param == "redis":
        return RedisRateWindows(runtime.redis, runtime.keys)
    return MemoryRateWindows()


def test_spend_adds_each_call_to_every_scope_of_its_turn(spend: SpendStore) -> None:
    # Given two calls of one turn, counted toward its person, chat and agent
    scopes = [("person", "telegram:user:42"), ("chat", "c|1"), ("agent", "default")]
    spend.add(DAY, scopes, usd=0.25, tokens=100)
    spend.add(DAY, scopes[1:], usd=0.5, tokens=10)
    # When the chat and an unknown scope are read
    read = spend.read(DAY, [("chat", "c|1"), ("agent", "nobody")])
    # Then the chat has both calls and the unknown scope reads as zeros
    assert read == [
        ScopeSpend(scope="agent", id="nobody"),
        ScopeSpend(scope="chat", id="c|1", usd=0.75, tokens=110),
    ]


def test_spend_read_of_the_whole_day_lists_every_scope_written(spend: SpendStore) -> None:
    # Given spend in two scopes on one day and another day
    spend.add(DAY, [("person", "p"), ("agent", "a")], usd=1.0, tokens=5)
    spend.add("2026-05-02", [("chat", "c")], usd=1.0, tokens=5)
    # When the first day is read whole
    read = spend.read(DAY)
    # Then both of its scopes are there, and nothing of the other day
    assert [(s.scope, s.id, s.usd) for s in read] == [("agent", "a", 1.0), ("person", "p", 1.0)]


def test_raise_today_adds_to_the_scopes_limits_for_that_day_only(spend: SpendStore) -> None:
    # Given a chat that spent today
    spend.add(DAY, [("chat", "c")], usd=2.0, tokens=50)
    # When its limits are raised twice today
    raise_today(spend, DAY, "chat", "c", usd=1.5)
    after = raise_today(spend, DAY, "chat", "c", usd=0.5, tokens=1000)
    # Then the raises add up today, and tomorrow has none
    assert after == ScopeSpend(
        scope="chat", id="c", usd=2.0, tokens=50, raised_usd=2.0, raised_tokens=1000
    )
    assert spend.read("2026-05-02", [("chat", "c")])[0].raised_usd == 0.0


def test_raise_today_refuses_an_unknown_scope_or_a_negative_amount(spend: SpendStore) -> None:
    # Given / When / Then a raise of a scope that does not exist, or by less than nothing
    with pytest.raises(ValueError, match="unknown scope"):
        raise_today(spend, DAY, "team", "x", usd=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="negative"):
        raise_today(spend, DAY, "chat", "c", usd=-1.0)


def test_first_notice_is_true_once_per_scope_and_day(spend: SpendStore) -> None:
    # Given / When the warning of a scope is asked for three times, and another's once
    answers = [spend.first_notice(DAY, ("chat", "c")) for _ in range(3)]
    other = spend.first_notice(DAY, ("agent", "c"))
    tomorrow = spend.first_notice("2026-05-02", ("chat", "c"))
    # Then only the first answer of each scope and day is yes
    assert answers == [True, False, False]
    assert other and tomorrow


def test_first_notice_counts_the_owner_asked_apart_from_the_warning(spend: SpendStore) -> None:
    # Given a scope warned today
    assert spend.first_notice(DAY, ("chat", "c"), "warned")
    # When / Then the owner may still be asked once to raise it, and only once
    assert [spend.first_notice(DAY, ("chat", "c"), "asked") for _ in range(2)] == [True, False]


def test_rate_windows_count_per_subject_per_minute(rates: RateWindows) -> None:
    # Given a minute's start
    start = 100 * WINDOW_MS
    # When one person sends three messages in it, another one, and the first again next minute
    counts = [rates.hit("a", start + i) for i in range(3)]
    other = rates.hit("b", start + 5)
    later = rates.hit("a", start + WINDOW_MS)
    # Then each count is of that person's messages in that minute
    assert counts == [1, 2, 3]
    assert (other, later) == (1, 1)
