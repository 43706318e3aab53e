"""Daily budgets and per-person rate limits, end to end: the agent on a fakeredis runtime
with the scripted model, prices set explicitly ($1.00 per scripted call)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.agent.budget_limits import BudgetLimits, judge
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.memory.heartbeat import heartbeat
from harness.agent.memory.notes import append_note
from harness.agent.rate_gate import slow_down_text
from harness.agent.roster import DEFAULT_AGENT
from harness.agent.session import CompactionLine, SessionLine
from harness.cli import app
from harness.events import MESSAGE_RECEIVED
from harness.llm import pricing
from harness.llm.types import Message
from harness.records.spend import ScopeSpend, spend_store
from harness.records.usage import utc_day
from harness.runtime import Runtime, publish, set_runtime
from harness.runtime.testing import drain
from harness.settings import get_settings
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock

MODEL = "budget-test-model"
CALL = {"input_tokens": 100, "output_tokens": 20}  # $1.00 at the price below


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """`MODEL_PRICES`: $10,000 per million input tokens, output free, so each scripted call
    costs $1.00; the process settings (what `harness budget` reads) are read afresh."""
    monkeypatch.setattr(pricing, "OVERRIDES", {})
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    monkeypatch.setenv("MODEL_PRICES", json.dumps({MODEL: {"input": 10_000, "output": 0}}))
    get_settings.cache_clear()
    get_settings()  # applies the prices
    yield
    get_settings.cache_clear()


def configure(agent: AgentRig, **settings: Any) -> None:
    """Rebuild the rig's agent with these settings (on the priced model)."""
    deps = build_deps(make_settings(agent.workspace, agent.model, agent_model=MODEL, **settings))
    set_agent_deps(deps)
    agent.deps = deps


@pytest.fixture
def cli_runtime(runtime: Runtime) -> Iterator[Runtime]:
    """The rig's runtime as the process's runtime, as `harness budget` finds it."""
    set_runtime(runtime)
    yield runtime
    set_runtime(None)


def today(runtime: Runtime) -> str:
    return utc_day(runtime.now_ms())


def warnings(agent: AgentRig) -> list[str]:
    return [r for r in agent.replies() if r.startswith("Heads up")]


def test_chat_budget_warns_once_stops_before_the_model_and_continues_after_a_raise(
    agent: AgentRig, priced: None, cli_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a $5.00 daily budget for each chat, and a turn that spent $3.00 (60%)
    configure(agent, budget_daily_usd_per_chat=5.0)
    monkeypatch.setenv("BUDGET_DAILY_USD_PER_CHAT", "5")  # for `harness budget`
    get_settings.cache_clear()
    (agent.workspace / "note.md").write_text("hi\n")
    read = Reply.tool("read", {"path": "note.md"}, **CALL)
    agent.model.script(read, read, Reply.answer("First.", **CALL))
    agent.say("one")
    assert agent.replies() == ["First."] and not warnings(agent)

    # When the next turn passes 80% ($4.00), then reaches 100% ($5.00) mid-turn
    agent.model.script(read, read)  # a third call would find no scripted reply
    agent.say("two")

    # Then the chat was warned once, and the turn stopped with no third model call
    assert len(agent.model.requests) == 5, "no model call at 100%"
    replies = agent.replies()
    assert len(warnings(agent)) == 1, replies
    assert "80%" in warnings(agent)[0] and "$5.00" in warnings(agent)[0]
    stop = replies[-1]
    assert "Today's budget for this chat ($5.00) is used up" in stop, stop
    assert "harness budget raise chat chat-1" in stop

    # And a later turn stops at once, with no model call and no second warning
    agent.say("three")
    assert len(agent.model.requests) == 5
    assert agent.replies()[-1] == stop and len(warnings(agent)) == 1

    # When the owner raises the chat's budget by $2.00 for today
    result = CliRunner().invoke(app, ["budget", "raise", "chat", "chat-1", "$2"])
    assert result.exit_code == 0, result.output

    # Then the conversation continues
    agent.model.script(Reply.answer("Back again.", **CALL))
    agent.say("four")
    assert agent.replies()[-1] == "Back again."
    assert len(agent.model.requests) == 6 and len(warnings(agent)) == 1
    shown = CliRunner().invoke(app, ["budget", "show", "--json"])
    assert shown.exit_code == 0, shown.output
    assert '"usd_limit": 7.0' in shown.output and '"usd": 6.0' in shown.output


def test_sub_agent_spend_counts_toward_the_chat_agent_and_person(
    agent: AgentRig, priced: None
) -> None:
    # Given token budgets on every scope, and a turn that delegates to a sub-agent
    configure(
        agent,
        budget_daily_tokens_per_chat=10_000,
        budget_daily_tokens_per_agent=10_000,
        budget_daily_tokens_per_person=10_000,
    )
    agent.model.script(
        Reply.tool("delegate_task", {"task": "look"}, **CALL),
        Reply.answer("Looked.", **CALL),  # the sub-agent
        Reply.answer("Done.", **CALL),
    )

    # When a Telegram person's turn runs
    say_as(agent, "delegate it", "42")

    # Then all three calls, the sub-agent's too, count toward the person, chat and agent
    spent = spend_store(agent.runtime).read(today(agent.runtime))
    by_scope = {(s.scope, s.id): (s.usd, s.tokens) for s in spent}
    assert by_scope == {
        ("chat", "tg-42"): (3.0, 360),
        ("agent", DEFAULT_AGENT): (3.0, 360),
        ("person", "telegram:user:42"): (3.0, 360),
    }


def test_no_budget_set_makes_no_budget_step(agent: AgentRig) -> None:
    # Given no budget (the default)
    agent.model.script(Reply.answer("Hi."))
    # When a turn runs
    run_id = agent.say("hello")
    # Then it has no budget or spend step, and nothing was recorded as spend
    keys = list(agent.runtime.ledger.journal(run_id))
    assert any(k.startswith("think") for k in keys), keys
    assert not [k for k in keys if k.startswith(("budget", "spend"))], keys
    assert spend_store(agent.runtime).read(today(agent.runtime)) == []


def test_judge_stops_at_the_first_used_up_limit_and_warns_from_80_percent() -> None:
    # Given a chat at 79%, an agent at 85% and a person at 100% of a limit raised to $1.50
    limits = BudgetLimits(
        usd={"person": 1.0, "chat": 1.0, "agent": None},
        tokens={"person": None, "chat": None, "agent": 100},
    )
    spends = [
        ScopeSpend(scope="chat", id="c", usd=0.79),
        ScopeSpend(scope="agent", id="a", tokens=85),
        ScopeSpend(scope="person", id="p", usd=1.5, raised_usd=0.5),
    ]
    # When they are judged
    over, near = judge(limits, spends)
    # Then the person stops the call and only the agent is warned about
    assert over is not None and (over.scope, over.id) == ("person", "p")
    assert [(s.scope, s.id) for s in near] == [("agent", "a")]


def say_as(agent: AgentRig, text: str, user: str) -> None:
    """A message from an allowlisted Telegram person (so DM_POLICY serves it)."""
    subject = f"telegram:user:{user}"
    meta = {"access": {"subjects": [subject], "pairing_subject": subject, "allowlisted": True}}
    publish(
        {
            "name": MESSAGE_RECEIVED,
            "data": {
                "message": text, "session_key": f"tg-{user}", "channel": "telegram",
                "sender": {"id": user, "name": "Ana"}, "destination": {"chat_id": user},
                "channel_meta": meta,
            },
        },
        runtime=agent.runtime,
    )  # fmt: skip
    drain(agent.runtime)


def test_rate_limit_answers_the_message_over_it_politely_and_starts_no_turn(
    agent: AgentRig,
) -> None:
    # Given two messages a minute allowed per person
    configure(agent, rate_limit_per_minute=2)
    agent.model.script(Reply.answer("One."), Reply.answer("Two."))
    # When one person sends four messages within a minute
    for text in ("a", "b", "c", "d"):
        say_as(agent, text, "42")
    # Then two were answered, the third got one polite reply, the fourth nothing
    assert agent.replies() == ["One.", "Two.", slow_down_text(2)]
    assert len(agent.model.requests) == 2
    # And neither message over the limit reached the chat's session
    said = [line.message.text for line in agent.deps.sessions.load("tg-42")]
    assert "c" not in said and "d" not in said


def test_rate_limit_spares_the_owners_own_entry_points(agent: AgentRig) -> None:
    # Given one message a minute allowed
    configure(agent, rate_limit_per_minute=1)
    agent.model.script(Reply.answer("One."), Reply.answer("Two."))
    # When the owner's entry point (no asker: harness chat) sends two
    agent.say("a")
    agent.say("b")
    # Then both are answered
    assert agent.replies() == ["One.", "Two."]


def test_heartbeat_spends_as_the_default_agent_and_stops_at_its_budget(
    agent: AgentRig, clock: ManualClock
) -> None:
    # Given 200 tokens a day for each agent, and a note waiting to be distilled
    configure(agent, budget_daily_tokens_per_agent=200)
    agent.runtime.registry.register(heartbeat)
    agent.runtime.register_functions()
    (agent.workspace / "MEMORY.md").write_text("# Memory\n")
    now = datetime.fromtimestamp(clock.now, UTC)
    append_note(agent.workspace, "Ana likes green tea.", now)
    agent.model.script(
        Reply.answer("# Memory\n- Ana likes green tea.\n", **CALL), Reply.answer("Hi.", **CALL)
    )

    # When the heartbeat distils (120 tokens), a chat turn follows (240), then the heartbeat again
    agent.distill(force=True)
    agent.say("hello")
    append_note(agent.workspace, "Ana's cat is called Miso.", now)
    outcome = agent.distill(force=True)

    # Then both calls counted toward the default agent, and the second heartbeat made no call
    read = spend_store(agent.runtime).read(today(agent.runtime), [("agent", DEFAULT_AGENT)])
    assert read[0].tokens == 240
    assert len(agent.model.requests) == 2
    assert outcome["reason"] == "the agent's daily budget is used up", outcome


def test_rate_limit_spares_the_owner_writing_from_a_chat(agent: AgentRig) -> None:
    # Given one message a minute allowed, and AGENT_OWNER naming Telegram user 42
    configure(agent, rate_limit_per_minute=1, agent_owner="telegram:user:42")
    agent.model.script(Reply.answer("One."), Reply.answer("Two."))
    # When user 42 sends two messages within a minute
    say_as(agent, "a", "42")
    say_as(agent, "b", "42")
    # Then both are answered
    assert agent.replies() == ["One.", "Two."]


def _long_history(agent: AgentRig) -> None:
    """A session near the 40,000-token context of `configure(..., agent_context_tokens=...)`."""
    lines = []
    for i in range(30):
        lines.append(SessionLine(message=Message.user(f"question {i} " + "q" * 4000)))
        lines.append(SessionLine(message=Message.assistant(f"answer {i} " + "a" * 4000)))
    agent.deps.sessions.append("chat-1", lines)


def test_compaction_summary_and_memory_flush_count_toward_the_budget(
    agent: AgentRig, priced: None
) -> None:
    # Given a $10.00 chat budget and a session due for compaction
    configure(agent, budget_daily_usd_per_chat=10.0, agent_context_tokens=40_000)
    _long_history(agent)
    agent.model.script(
        Reply.answer("nothing to remember", **CALL),  # the memory flush
        Reply.answer("## Goal\nsummary", **CALL),  # the summary
        Reply.answer("Fine.", **CALL),
    )
    # When the user writes and the turn compacts before answering
    agent.say("hello again")
    # Then all three model calls, the flush and the summary too, were counted
    assert agent.replies() == ["Fine."]
    (chat,) = spend_store(agent.runtime).read(today(agent.runtime), [("chat", "chat-1")])
    assert chat.usd == 3.0, chat


def test_compaction_summary_is_not_made_once_the_budget_is_used_up(
    agent: AgentRig, priced: None
) -> None:
    # Given a $1.00 chat budget and a session due for compaction
    configure(agent, budget_daily_usd_per_chat=1.0, agent_context_tokens=40_000)
    _long_history(agent)
    agent.model.script(Reply.answer("nothing to remember", **CALL))  # the memory flush
    # When the user writes: the flush uses the budget up
    agent.say("hello again")
    # Then no summary was asked for, the session was not compacted, and the turn stopped
    assert len(agent.model.requests) == 1
    assert "is used up" in agent.replies()[-1]
    assert not any(isinstance(line, CompactionLine) for line in agent.deps.sessions.load("chat-1"))


def test_a_turn_that_compacted_and_retried_its_think_counts_each_call_once(
    agent: AgentRig, priced: None, clock: ManualClock
) -> None:
    # Given a $10.00 chat budget, a session due for compaction, and a model that fails the
    # think after the memory flush and the summary were made (the run is retried: a replay
    # after the session was rewritten, which has no older part left to plan from)
    configure(agent, budget_daily_usd_per_chat=10.0, agent_context_tokens=40_000)
    _long_history(agent)
    agent.model.script(
        Reply.answer("nothing to remember", **CALL),  # the memory flush
        Reply.answer("## Goal\nsummary", **CALL),  # the summary
        Reply.error(500, "boom"),
        Reply.answer("Fine.", **CALL),
    )
    # When the user writes and the retry comes round
    agent.say("hello again")
    for _ in range(4):
        clock.advance(30)
        drain(agent.runtime)
    # Then the replay took the compaction's steps again, from their records, so the answer's
    # spend went to a step of its own: three calls made, three counted
    assert agent.replies() == ["Fine."]
    (chat,) = spend_store(agent.runtime).read(today(agent.runtime), [("chat", "chat-1")])
    assert chat.usd == 3.0, chat
