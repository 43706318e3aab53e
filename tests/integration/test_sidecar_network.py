"""A network the agent declared in Python (`@network` in `functions/`), run end to end: the real
sidecar loads the file in its function host, registers the router and the declaration, a real
worker runs the network with the scripted model, and each decision is an invoke of the router
function served by the sidecar (real Redis, real subprocesses)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agent.networks.declare import router_id
from harness.agent.networks.run import NETWORK_FUNCTION
from harness.events import NETWORK_RUN
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.function_sources import FILE_SOURCE, origins
from harness.runtime.ledger import RunRecord
from tests.agent.networks.test_network_declared import NIGHTLY
from tests.fakes.model_server import ModelServer, Reply
from tests.integration.sidecar_fleet import SidecarFleet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROUTER = router_id("nightly")


@pytest.fixture
def network_fleet(
    redis_url: str, tmp_path: Path, model_server: ModelServer
) -> Iterator[SidecarFleet]:
    """A sidecar serving `nightly.py`, a scheduler and a worker, on a workspace with the
    researcher and the writer."""
    workspace = tmp_path / "workspace"
    (workspace / "functions").mkdir(parents=True)
    for name in ("researcher", "writer"):
        folder = workspace / "agents" / name
        folder.mkdir(parents=True)
        (folder / "AGENT.md").write_text(
            f"---\ndescription: The {name}.\ntools: [read]\n---\nYou are the {name}.\n"
        )
    fleet = SidecarFleet(redis_url=redis_url, workspace=workspace)
    fleet.extra_env.update(
        ANTHROPIC_API_KEY=model_server.api_key, ANTHROPIC_BASE_URL=model_server.url
    )
    fleet.write("nightly.py", NIGHTLY)
    fleet.start("sidecar", "sidecar")
    fleet.start("scheduler", "scheduler")
    fleet.start("worker", "worker", "--concurrency", "2")
    try:
        fleet.wait_registered(ROUTER)
        fleet.wait_registered(NETWORK_FUNCTION)
        yield fleet
    finally:
        fleet.stop()


def _steps(runtime: Runtime, run_id: str, step_id: str) -> list[Any]:
    journal = runtime.ledger.journal(run_id)
    found, n = [], 0
    while f"{step_id}:{n}" in journal:
        found.append(journal[f"{step_id}:{n}"].get("v"))
        n += 1
    return found


def test_declared_network_runs_through_the_real_sidecar_with_typed_state(
    network_fleet: SidecarFleet, model_server: ModelServer
) -> None:
    # Given the router registered by the sidecar as a function of functions/, and agents
    # that write the state: the writer first tries a number for the str | None summary
    runtime = network_fleet.runtime()
    assert origins(runtime)[ROUTER].source == FILE_SOURCE
    model_server.script(
        Reply.tool("state_set", {"key": "findings", "value": ["tea is old"]}),
        Reply.answer("Found."),
        Reply.tool("state_set", {"key": "summary", "value": 42}),
        Reply.tool("state_set", {"key": "summary", "value": "Tea is old."}),
        Reply.answer("Written."),
    )

    # When the network is started
    event = {"name": NETWORK_RUN, "data": {"network": "nightly", "task": "Summarise"}}
    run_id = run_id_for(NETWORK_FUNCTION, publish(event, runtime=runtime).event_id)

    def finished() -> RunRecord | None:
        record = runtime.ledger.run(run_id)
        return record if record and record.status in ("completed", "failed") else None

    record = wait_for(finished, what=f"the network run {run_id}\n{network_fleet.logs()}")
    assert record is not None

    # Then it completed: the sidecar's router (given a Nightly each time) chose the
    # researcher, the writer, then stopped, over three invokes
    assert record.status == "completed", record.error
    decisions = _steps(runtime, run_id, "route")
    assert [d["next"] for d in decisions] == ["researcher", "writer", None], decisions
    assert decisions[0]["reason"] == f"{ROUTER}: no findings at iteration 0"
    assert decisions[1]["reason"] == f"{ROUTER}: findings, no summary; researcher ran last"
    assert decisions[2]["reason"] == f"{ROUTER} stopped: done after 2 agents"
    assert len(_steps(runtime, run_id, "route-call")) == 3
    router_runs = [r for r in runtime.ledger.recent(100) if r.function_id == ROUTER]
    assert len(router_runs) == 3 and {r.status for r in router_runs} == {"completed"}
    # and the state was checked by the model's schema at each step: the number refused
    assert [s["state"] for s in _steps(runtime, run_id, "state")] == [
        {"findings": ["tea is old"]},
        {"findings": ["tea is old"], "summary": "Tea is old."},
    ]
    refused = model_server.requests[3].body["messages"][-1]["content"][0]
    assert refused.get("is_error") is True and "refused" in json.dumps(refused), refused
    assert record.result is not None and record.result["answer"] == "Written."
