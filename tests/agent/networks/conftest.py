"""Network fixtures: the agent rig with `agent-network` registered, and helpers to declare
agents and networks in its workspace and run one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from harness.agent.networks.run import run_network
from harness.events import NETWORK_RUN
from harness.runtime import publish, run_id_for
from harness.runtime.functions import FunctionRegistry
from harness.runtime.ledger import RunRecord
from harness.runtime.testing import drain
from harness.settings import get_settings
from tests.agent.conftest import AgentRig

REPLY = {"channel": "test", "destination": {"chat_id": "chat-1"}, "session_key": "chat-1"}


@dataclass
class NetworkRig:
    """An `AgentRig` that also runs networks."""

    agent: AgentRig

    def declare_agent(self, name: str, tools: str = "[read]") -> None:
        """A named agent `name` with the `read` tool (or `tools`)."""
        folder = self.agent.workspace / "agents" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "AGENT.md").write_text(
            f"---\ndescription: The {name}.\ntools: {tools}\n---\nYou are the {name}.\n"
        )

    def declare_network(self, name: str, text: str) -> None:
        """The network file `networks/<name>.md` with `text`."""
        folder = self.agent.workspace / "networks"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.md").write_text(text)

    def start(self, network: str, task: str, *, run: bool = True, **data: Any) -> str:
        """Publish `agent.network.run` (answer to chat-1) and, by default, drain. Returns
        the network run's id."""
        payload = {"network": network, "task": task, "reply": REPLY, **data}
        result = publish({"name": NETWORK_RUN, "data": payload}, runtime=self.agent.runtime)
        if run:
            drain(self.agent.runtime)
        return run_id_for(run_network.id, result.event_id)

    def record(self, run_id: str) -> RunRecord:
        """The run as the ledger holds it."""
        record = self.agent.runtime.ledger.run(run_id)
        assert record is not None, f"no run {run_id}"
        return record

    def steps(self, run_id: str, step_id: str) -> list[Any]:
        """The recorded values of the run's steps named `step_id`, in order."""
        journal = self.agent.runtime.ledger.journal(run_id)
        found, n = [], 0
        while f"{step_id}:{n}" in journal:
            found.append(journal[f"{step_id}:{n}"].get("v"))
            n += 1
        return found

    def states(self, run_id: str) -> list[dict[str, Any]]:
        """The state after each agent, from the run's "state" steps."""
        return [value["state"] for value in self.steps(run_id, "state")]


@pytest.fixture
def restore_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For a CLI test: `--workspace` sets AGENT_WORKSPACE; it is restored after the test."""
    monkeypatch.setenv("AGENT_WORKSPACE", "")
    yield
    get_settings.cache_clear()


@pytest.fixture
def network(agent: AgentRig, registry: FunctionRegistry) -> NetworkRig:
    registry.register(run_network)
    agent.runtime.register_functions()
    return NetworkRig(agent)
