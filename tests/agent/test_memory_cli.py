"""`harness memory history | show | restore | distill`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from harness.agent.deps import agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.memory.heartbeat import heartbeat
from harness.agent.memory.history import MemoryHistory
from harness.agent.memory.notes import append_note
from harness.commands.memory import memory_app
from harness.runtime import Runtime, set_runtime
from harness.runtime.testing import DrainingKicker
from harness.settings import get_settings
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock

NOW = datetime(2027, 1, 15, 10, 0, tzinfo=UTC)
FIRST = "# Memory\n\n- Ana's sister is Ada.\n"
SECOND = "# Memory\n\n- Ana's sister is Ada.\n- Ana lives in Porto.\n"


@pytest.fixture
def cli(agent: AgentRig, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentRig]:
    """The CLI pointed at the test agent's workspace, publishing to a runtime that runs every
    kicked run before `publish` returns."""
    monkeypatch.setenv("AGENT_WORKSPACE", str(agent.workspace))
    monkeypatch.setenv("AGENT_TIMEZONE", "UTC")
    get_settings.cache_clear()
    clock.now = NOW.timestamp()
    kicker = DrainingKicker()
    runtime = Runtime(
        redis=agent.runtime.redis, kicker=kicker, registry=agent.runtime.registry, clock=clock
    )
    kicker.runtime = runtime
    # on the gateway path the distillation parks on its model call: a gateway makes it in
    # the drain, as the `runtime` fixture's has (tests/agent/conftest.py, `model_gateway`)
    runtime.call_servers.append(ModelGateway.drained(runtime, lambda: agent_deps().settings))
    runtime.registry.register(heartbeat)
    runtime.register_functions()
    set_runtime(runtime)
    (agent.workspace / "MEMORY.md").write_text(FIRST)
    yield agent
    set_runtime(None)
    get_settings.cache_clear()


def _run(*args: str) -> str:
    result = CliRunner().invoke(memory_app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_distill_force_runs_the_heartbeat_through_the_bus(cli: AgentRig) -> None:
    # Given a note and a model that adds it
    append_note(cli.workspace, "Ana moved to Porto.", NOW)
    cli.model.script(Reply.answer(SECOND))
    # When the person asks for a distillation now
    output = _run("distill", "--force")
    # Then it ran, said so, and MEMORY.md was replaced with the old text kept as version 1
    assert "written" in output and "version 1" in output, output
    assert (cli.workspace / "MEMORY.md").read_text() == SECOND
    assert len(cli.model.requests) == 1


def test_history_show_and_restore(cli: AgentRig) -> None:
    # Given a MEMORY.md that replaced an earlier one
    MemoryHistory(cli.workspace).replace(SECOND, reason="distillation (run r1)", now=NOW)
    # When the person lists, shows and restores
    listed = _run("history")
    shown = _run("show", "1")
    restored = _run("restore", "1")
    # Then they see version 1 with its size, its text, and get it back as current
    assert "distillation (run r1)" in listed and str(len(FIRST)) in listed
    assert shown == FIRST
    assert "version 2" in restored
    assert (cli.workspace / "MEMORY.md").read_text() == FIRST
    assert _run("show") == FIRST
    assert _run("show", "2") == SECOND


def test_show_of_an_unknown_version_fails_with_a_message(cli: AgentRig) -> None:
    result = CliRunner().invoke(memory_app, ["show", "7"])
    assert result.exit_code == 4  # exit_codes.NOT_FOUND
    assert "no version 7" in result.output


def test_a_held_back_distillation_is_listed_and_can_be_read(cli: AgentRig) -> None:
    # Given a distillation that would have emptied MEMORY.md
    append_note(cli.workspace, "Ana moved to Porto.", NOW)
    cli.model.script(Reply.answer("# Memory\n"))
    held = _run("distill", "--force")
    # When the person looks at the history
    listed = _run("history")
    name = MemoryHistory(cli.workspace).rejected()[0].name
    # Then the hold-back is reported, listed with its reason, and readable
    assert "held back" in held
    assert "drop" in listed and name in listed
    assert _run("show", "--rejected", name) == "# Memory\n"
