"""The dashboard's page of a network run shows its shared state, escaped and redacted, each
router decision, and links to the agents' runs."""

from __future__ import annotations

import json

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from pydantic import SecretStr

from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes
from tests.agent.networks.conftest import NetworkRig
from tests.fakes.model_server import Reply

KEY = "secret-key-1"
TOKEN = "xoxb-123456789012-NETSTATEsecret"


def test_run_page_shows_a_network_runs_state_and_decisions(network: NetworkRig) -> None:
    # Given a network run whose state holds markup and a token (from its start: the agent
    # only answers, so the state after it is the same)
    network.declare_agent("writer")
    network.declare_network(
        "one",
        "---\ndescription: One.\nagents: [writer]\nrouter: {kind: sequence, order: [writer]}\n"
        "---\n",
    )
    network.agent.model.script(Reply.answer("Done."))
    run_id = network.start("one", "Write", state={"draft": f"<script>x</script> {TOKEN}"})

    # When its dashboard page is opened
    runtime = network.agent.runtime
    settings = Settings(_env_file=None, harness_api_key=SecretStr(KEY))  # type: ignore[call-arg]
    app = create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])
    response = TestClient(app).get(
        f"/dashboard/runs/{run_id}", headers={"Authorization": f"Bearer {KEY}"}
    )

    # Then the state is there as JSON, its markup escaped and its token redacted
    assert response.status_code == 200, response.text
    html = response.text
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert TOKEN not in html
    page = BeautifulSoup(html, "html.parser")
    (state,) = page.select("#network-state")
    assert json.loads(state.text) == {"draft": "<script>x</script> [REDACTED]"}, state.text
    # And each decision: the writer by the sequence, linked to its run, then the stop
    rows = page.select("#decisions tr[data-decision]")
    shown = [[cell.get_text(strip=True) for cell in row.select("td")] for row in rows]
    (child,) = page.select("#children tr[data-child]")
    child_id = child["data-child"]
    assert shown == [
        ["1", "writer", "step 1 of the sequence", "sequence", child_id],
        ["2", "stop", "the sequence is done", "sequence", ""],
    ], shown
    link = rows[0].select_one("a")
    assert link is not None and link["href"] == f"/dashboard/runs/{child_id}"
