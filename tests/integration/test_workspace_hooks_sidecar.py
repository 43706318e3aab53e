"""The agent's own tool hooks through the real sidecar: a file in workspace/functions/ that
the sidecar loads and serves vetoes a bash call and rewrites a result, for a turn run by a
real worker (real Redis, subprocesses, the scripted model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent.handlers import HANDLE_MESSAGE
from harness.agent.workspace_hooks import HOOK_AFTER_TOOL, HOOK_BEFORE_TOOL
from harness.chat_client import ChatSession
from harness.runtime import Runtime, run_id_for
from tests.fakes.model_server import ModelServer, Reply, anthropic_tool_results
from tests.integration.sidecar_fleet import SidecarFleet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

HOOKS = """
from harness.runtime import event, function


@function(id="hook-before-tool", trigger=event("hook/before-tool"))
def before_tool(ctx):
    if ctx.event.data["name"] == "bash":
        return {"veto": "no shell in this workspace"}
    return None


@function(id="hook-after-tool", trigger=event("hook/after-tool"))
def after_tool(ctx):
    if ctx.event.data["name"] == "write" and not ctx.event.data["result"]["is_error"]:
        return {"content": "the note is filed under tea"}
    return None
"""


@pytest.fixture
def hooked_fleet(
    redis_url: str, tmp_path: Path, model_server: ModelServer
) -> Iterator[SidecarFleet]:
    """A sidecar serving the workspace's hooks.py, a scheduler and an agent worker on one
    workspace, with AGENT_WORKSPACE_HOOKS and the shell on."""
    fleet = SidecarFleet(
        redis_url=redis_url,
        workspace=tmp_path / "workspace",
        extra_env={
            "ANTHROPIC_API_KEY": model_server.api_key,
            "ANTHROPIC_BASE_URL": model_server.url,
            "AGENT_WORKSPACE_HOOKS": "true",
            "AGENT_ALLOW_SHELL": "true",
        },
    )
    fleet.functions.mkdir(parents=True)
    fleet.write("hooks.py", HOOKS)
    try:
        fleet.start("sidecar", "sidecar")
        fleet.start("scheduler", "scheduler")
        fleet.start("worker", "worker", "--concurrency", "2")
        for function_id in (HOOK_BEFORE_TOOL, HOOK_AFTER_TOOL, HANDLE_MESSAGE):
            fleet.wait_registered(function_id)
        yield fleet
    finally:
        fleet.stop()


def _runs_of(runtime: Runtime, function_id: str) -> int:
    return sum(1 for r in runtime.ledger.recent(200) if r.function_id == function_id)


def test_sidecar_served_hooks_veto_bash_and_rewrite_a_result(
    hooked_fleet: SidecarFleet, model_server: ModelServer
) -> None:
    # Given a model that runs bash, then writes a note, then answers
    runtime = hooked_fleet.runtime()
    model_server.script(
        Reply.tool("bash", {"command": "echo hi > /tmp/never"}),
        Reply.tool("write", {"path": "notes/tea.md", "content": "tea\n"}),
        Reply.answer("Done."),
    )

    # When a chat message starts a turn on the worker
    chat = ChatSession(runtime, "cli-hooks", timeout=60)
    run_id = run_id_for(HANDLE_MESSAGE, chat.send("note tea").event_id)
    wait_for(
        lambda: (run := runtime.ledger.run(run_id)) is not None and run.status == "completed",
        what=f"the turn to complete\n{hooked_fleet.logs()}",
        timeout=120,
    )

    # Then the model read the sidecar's veto for bash and its rewrite of the write's result
    (vetoed,) = anthropic_tool_results(model_server.requests[1].body)
    assert "no shell in this workspace" in str(vetoed["content"]) and vetoed["is_error"]
    rewritten = anthropic_tool_results(model_server.requests[2].body)[-1]
    assert str(rewritten["content"]).endswith("the note is filed under tea"), rewritten
    assert (hooked_fleet.workspace / "notes" / "tea.md").read_text() == "tea\n"
    # And each hook ran once per tool call, though the turn replayed after each invoke
    assert _runs_of(runtime, HOOK_BEFORE_TOOL) == 2
    assert _runs_of(runtime, HOOK_AFTER_TOOL) == 2
