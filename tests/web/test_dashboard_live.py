"""The dashboard's live streams keep an idle connection open and let a browser reconnect
without missing anything; every page fits a phone."""

from __future__ import annotations

import json

import pytest

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.web.dashboard import render
from tests.web.dashboard_client import AUTH, dashboard_client, live_lines, one, soup


def _sleeping_run(runtime: Runtime, registry: FunctionRegistry) -> str:
    @function(id="napper", trigger=event("app/nap"), registry=registry)
    def napper(ctx: Context) -> None:
        ctx.step.sleep("nap", "1h")

    runtime.register_functions()
    run_id = publish({"name": "app/nap", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    return run_id


def test_run_stream_sends_a_ping_comment_while_nothing_changes(
    runtime: Runtime, registry: FunctionRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run that sleeps for an hour, and pings due often
    run_id = _sleeping_run(runtime, registry)
    monkeypatch.setattr(render, "PING_S", 0.05)
    # When its live stream is read past its first update
    lines = live_lines(runtime, f"/dashboard/runs/{run_id}/live", lambda line: line.startswith(":"))
    # Then the first update is numbered and says how soon to reconnect, and a ping comment
    # follows it though the run did not change
    assert "event: run" in lines and "id: 1" in lines, lines
    assert f"retry: {render.RETRY_MS}" in lines, lines
    assert lines[-1].startswith(": ping"), lines


def test_run_stream_of_an_ended_run_sends_its_state_then_end(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run that has completed
    @function(id="quick", trigger=event("app/quick"), registry=registry)
    def quick(ctx: Context) -> str:
        return "ok"

    runtime.register_functions()
    run_id = publish({"name": "app/quick", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    # When a browser (re)connects to its stream
    body = dashboard_client(runtime).get(f"/dashboard/runs/{run_id}/live", headers=AUTH).text
    # Then it gets the run's state, then `end`, so its script stops reconnecting
    events = [block for block in body.split("\r\n\r\n") if block.strip()]
    assert "event: run" in events[0] and "event: end" in events[-1], events
    data = next(line for line in events[0].splitlines() if line.startswith("data: "))
    assert json.loads(data.removeprefix("data: "))["status"] == "completed"


@pytest.mark.parametrize("path", ["/dashboard", "/dashboard/conversations", "/dashboard/login"])
def test_every_page_declares_a_viewport_for_phones(runtime: Runtime, path: str) -> None:
    # When a page is opened / Then it sets the viewport, so a phone does not zoom out
    client = dashboard_client(runtime)
    page = soup(client, path)
    viewport = one(page, 'meta[name="viewport"]')
    assert viewport is not None and "width=device-width" in viewport["content"], page.head
