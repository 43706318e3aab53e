"""A run page on the dashboard lists the runs the run started, how, and what they spent."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from pydantic import SecretStr

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes
from tests.parent_runs import finished_parent
from tests.runtime_fixtures import ManualClock

KEY = "secret-key-1"


def _page(runtime: Runtime, run_id: str) -> BeautifulSoup:
    settings = Settings(_env_file=None, harness_api_key=SecretStr(KEY))  # type: ignore[call-arg]
    app = create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])
    response = TestClient(app).get(
        f"/dashboard/runs/{run_id}", headers={"Authorization": f"Bearer {KEY}"}
    )
    assert response.status_code == 200, response.text
    return BeautifulSoup(response.text, "html.parser")


def test_run_page_lists_child_runs_how_they_started_and_their_cost(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a parent that waits for one child, starts another detached, and reports their cost
    run_id = finished_parent(runtime, registry, clock)

    # When its page is opened
    page = _page(runtime, run_id)

    # Then both children are listed in start order, linked, with how they were started
    rows = page.select("#children tr[data-child]")
    shown = [[cell.get_text(strip=True) for cell in row.select("td")] for row in rows]
    assert [row[1:] for row in shown] == [
        ["kid", "completed", "wait-for:0 (waited)"],
        ["kid", "completed", "spawn:0 (detached)"],
    ], shown
    links = [row.select_one("a") for row in rows]
    assert [a["href"] for a in links if a] == [f"/dashboard/runs/{row[0]}" for row in shown]
    # And the children's cost from the parent's output
    (cost,) = page.select("#children-cost")
    assert "$0.2500" in cost.text, cost.text


def test_run_page_without_children_shows_no_child_section(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run that started nothing
    @function(id="alone", trigger=event("app/alone"), registry=registry)
    def alone(ctx: Context) -> str:
        return "ok"

    runtime.register_functions()
    run_id = publish({"name": "app/alone", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    # When its page is opened / Then it has no child runs section and no network section
    page = _page(runtime, run_id)
    assert page.select("#children") == [] and page.select("#decisions") == []
