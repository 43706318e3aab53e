"""A run page draws its steps as a waterfall (retries marked, waits as gaps, sub-runs linked)
and shows a failed step's traceback with its secrets masked."""

from __future__ import annotations

from bs4 import Tag

from harness.errors import NonRetriableError
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.parent_runs import finished_parent
from tests.runtime_fixtures import ManualClock
from tests.web.dashboard_client import dashboard_client, one, soup

TOKEN = "xoxb-123456789012-TRACEBACKsecret"


def test_run_page_waterfall_marks_retries_and_shows_a_sleep_as_a_gap(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run that works 2 s, sleeps a minute, then runs a step that fails once
    tries: list[int] = []

    def work() -> str:
        clock.advance(2)
        return "done"

    def flaky() -> str:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("try again")
        return "ok"

    @function(id="paced", trigger=event("app/paced"), retries=2, registry=registry)
    def paced(ctx: Context) -> str:
        ctx.step.run("work", work)
        ctx.step.sleep("pause", "1m")
        return ctx.step.run("flaky", flaky)

    runtime.register_functions()
    run_id = publish({"name": "app/paced", "data": {}}, runtime=runtime).run_ids[0]
    for _ in range(3):
        drain(runtime)
        clock.advance(61)
    drain(runtime)
    # When its page is opened
    page = soup(dashboard_client(runtime), f"/dashboard/runs/{run_id}")
    # Then the waterfall has the three steps in start order
    bars = page.select("#timeline .wf-row")
    assert [bar["data-bar"] for bar in bars] == ["work:0", "pause:0", "flaky:0"], bars
    work_bar, pause_bar, flaky_bar = (one(bar, ".wf-bar") for bar in bars)
    # And the sleep is drawn as a gap labelled with its kind, after the work
    assert "gap" in pause_bar["class"] and "gap" not in work_bar["class"]
    assert "sleep" in one(bars[1], ".wf-took").get_text()
    assert _left(pause_bar) > _left(work_bar) and _left(flaky_bar) > _left(pause_bar)
    # And the retried step is marked with its two tries
    assert one(bars[2], ".wf-retry").get_text() == "↻2"


def _left(bar: Tag) -> float:
    style = str(bar["style"])
    return float(style.split("left:")[1].split("%")[0])


def test_run_page_waterfall_links_the_runs_a_step_started(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a parent that invoked one child and started another
    run_id = finished_parent(runtime, registry, clock)
    # When its page is opened
    page = soup(dashboard_client(runtime), f"/dashboard/runs/{run_id}")
    # Then the steps that started them link to the child runs
    links = {
        str(row["data-bar"]): str(link["href"])
        for row in page.select("#timeline .wf-row")
        for link in row.select(".wf-label a")
    }
    children = [row["data-child"] for row in page.select("#children tr[data-child]")]
    assert sorted(links.values()) == sorted(f"/dashboard/runs/{c}" for c in children), links


def test_failed_step_shows_its_traceback_with_secrets_masked(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a step that fails for good deep in a helper, with a token in its message
    def connect() -> None:
        raise NonRetriableError(f"refused with token {TOKEN}")

    def call_platform() -> None:
        connect()

    @function(id="poster", trigger=event("app/post"), registry=registry)
    def poster(ctx: Context) -> None:
        ctx.step.run("post", call_platform)

    runtime.register_functions()
    run_id = publish({"name": "app/post", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    # When the run's page is opened
    response = dashboard_client(runtime).get(
        f"/dashboard/runs/{run_id}", headers={"Authorization": "Bearer secret-key-1"}
    )
    page = soup(dashboard_client(runtime), f"/dashboard/runs/{run_id}")
    # Then the failed step shows its traceback, down to the frame that raised
    (traceback,) = page.select('tr[data-step="post:0"] details.traceback pre')
    text = traceback.get_text()
    assert "Traceback (most recent call last)" in text, text
    assert "in call_platform" in text and "in connect" in text, text
    # And the token is masked there and nowhere on the page
    assert "[REDACTED]" in text and TOKEN not in response.text
