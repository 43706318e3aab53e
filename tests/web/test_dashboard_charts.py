"""The console's charts: server-drawn SVG bars from the run ledger and the usage records."""

from __future__ import annotations

from harness.events.event import MESSAGE_HANDLER
from harness.observe.trends import bucket_runs, p95
from harness.records.stores import redis_records
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.ledger import RunRecord
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock
from tests.web.console_client import signed_in, soup


def _titles(page: object, chart: str) -> list[str]:
    return [t.get_text() for t in page.select(f"#{chart} rect.chart-bar title")]  # type: ignore[attr-defined]


def test_charts_draw_one_bar_per_day_with_the_known_tokens_and_cost(
    runtime: Runtime, clock: ManualClock
) -> None:
    # Given two days of known usage: 1000 + 500 tokens today, 200 the day before
    now_ms = int(clock.now * 1000)
    usage = redis_records(runtime).usage
    usage.add(now_ms, {"model": "claude-haiku-4-5", "in": 1000, "out": 500}, session="s",
              function="f")  # fmt: skip
    usage.add(now_ms - 86_400_000, {"model": "claude-haiku-4-5", "in": 200}, session="s",
              function="f")  # fmt: skip
    # When the charts page is opened
    page = soup(signed_in(runtime), "/dashboard/charts?span=14d")
    # Then the tokens chart has 14 daily bars, the last two with the known totals
    tokens = _titles(page, "chart-tokens")
    assert len(tokens) == 14, tokens
    assert tokens[-2].endswith(": 200 tokens") and tokens[-1].endswith(": 1500 tokens"), tokens
    assert all(t.endswith(": 0 tokens") for t in tokens[:-2]), tokens
    # And the cost chart prices them (haiku 4.5: $1 in, $5 out per million)
    cost = _titles(page, "chart-cost")
    assert cost[-1].endswith(": $0.0035"), cost
    # And the axis is labelled with the peak
    assert page.select_one("#chart-tokens text.y-max").get_text() == "1.5k"  # type: ignore[union-attr]


def test_charts_count_runs_and_failures_per_hour(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given three runs this hour, one of which fails
    @function(id="maybe", trigger=event("app/maybe"), retries=0, registry=registry)
    def maybe(ctx: Context) -> str:
        if ctx.event.data.get("fail"):
            raise RuntimeError("boom")
        return "ok"

    runtime.register_functions()
    for fail in (False, False, True):
        publish({"name": "app/maybe", "data": {"fail": fail}}, runtime=runtime)
    drain(runtime)
    # When the 24 h charts are opened
    page = soup(signed_in(runtime), "/dashboard/charts")
    # Then 24 hourly bars, this hour's showing 3 runs and 1 failure
    runs, failed = _titles(page, "chart-runs"), _titles(page, "chart-failed")
    assert len(runs) == 24 and len(failed) == 24, (runs, failed)
    assert runs[-1].endswith(": 3 runs") and failed[-1].endswith(": 1 failed"), (runs, failed)
    assert sum(t.endswith(": 0 runs") for t in runs) == 23, runs


def test_charts_refuse_an_unknown_span(runtime: Runtime) -> None:
    # When a span the page does not draw is asked for, Then it is a 400, not a 500
    response = signed_in(runtime).get("/dashboard/charts?span=3y")
    assert response.status_code == 400, response.text


def test_p95_turn_latency_is_the_nearest_rank_of_the_turns_in_the_bucket() -> None:
    # Given 20 turns of 1..20 s and a non-turn run of 99 s in one hour
    start = 1_800_000_000_000
    records = [
        RunRecord(id=f"r{i}", function_id=MESSAGE_HANDLER, status="completed",
                  created_at=start + i, ended_at=start + i + i * 1000)
        for i in range(1, 21)
    ] + [RunRecord(id="other", function_id="x", status="failed", created_at=start,
                   ended_at=start + 99_000)]  # fmt: skip
    # When they are bucketed hourly
    (bucket, empty) = bucket_runs(records, start, 3_600_000, 2, "%H:00")
    # Then the p95 is the 19th of 20 turns, and only turns count toward it
    assert (bucket.runs, bucket.failed, bucket.p95_turn_ms) == (21, 1, 19_000)
    assert (empty.runs, empty.p95_turn_ms) == (0, None)
    assert p95([]) is None and p95([5]) == 5
