"""`harness networks` lists what loaded and what did not; `harness runs show` shows a network
run's shared state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.runtime import set_runtime
from tests.agent.networks.conftest import NetworkRig
from tests.fakes.model_server import Reply


@pytest.mark.usefixtures("restore_settings")
def test_networks_command_lists_networks_and_load_errors_with_lines(
    network: NetworkRig,
) -> None:
    # Given one good network and one naming an unknown agent on line 3
    network.declare_agent("writer")
    network.declare_network(
        "good", "---\ndescription: Fine.\nagents: [writer]\nrouter: {kind: agent}\n---\n"
    )
    network.declare_network(
        "bad", "---\ndescription: x\nagents: [ghost]\nrouter: {kind: agent}\n---\n"
    )

    # When `harness networks --json` runs on that workspace
    workspace = str(network.agent.workspace)
    result = CliRunner().invoke(app, ["--workspace", workspace, "networks", "--json"])

    # Then it lists the good one and the bad one's error at its line
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [n["name"] for n in shown["networks"]] == ["good"]
    assert [(e["path"], e["line"]) for e in shown["errors"]] == [("networks/bad.md", 3)]


def test_runs_show_prints_a_network_runs_state(network: NetworkRig, tmp_path: Path) -> None:
    # Given a network run whose one agent set the state
    network.declare_agent("writer")
    network.declare_network(
        "one",
        "---\ndescription: One.\nagents: [writer]\nrouter: {kind: sequence, order: [writer]}\n"
        "---\n",
    )
    network.agent.model.script(
        Reply.tool("state_set", {"key": "draft", "value": "v1"}), Reply.answer("Done.")
    )
    run_id = network.start("one", "Write")

    # When `harness runs show` shows it
    set_runtime(network.agent.runtime)
    try:
        result = CliRunner().invoke(app, ["runs", "show", run_id])
    finally:
        set_runtime(None)

    # Then a state line shows the state after its agent
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("state ")]
    assert '"draft"' in line and "v1" in line and "after 1 agent" in line, line
