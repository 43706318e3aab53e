"""The agent authors a task end to end, on real Redis with a real worker, scheduler and
sidecar (subprocesses) and the scripted model: it writes a cron function with a bug,
test-runs it with `function_run` (it fails), reads the failure with `runs_show`, fixes it
with `edit`, test-runs it again (it completes), and then the scheduled run succeeds."""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent.handlers import HANDLE_MESSAGE
from harness.chat_client import ChatSession
from harness.events import CRON_TICK
from harness.runtime import Runtime, run_id_for
from tests.fakes.model_server import ModelServer, Reply, anthropic_tool_results
from tests.integration.conftest import FLEET_WAIT_S, Fleet, runtime_for, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# A cron of every second (croniter's sixth field), so the test waits on no wall-clock minute.
# The bug: a cron tick's data has no "size".
BUGGY = textwrap.dedent(
    """
    from harness.runtime import cron, function


    @function(id="tick", trigger=cron("* * * * * *"), retries=0)
    def tick(ctx):
        return {"year": ctx.event.data["tick"][:4], "size": len(ctx.event.data["size"])}
    """
)
BUG, FIX = 'len(ctx.event.data["size"])', 'len(ctx.event.data.get("size", ""))'
TEST_DATA = {"function_id": "tick", "tick": "2026-12-03T10:00:00+00:00"}


@pytest.fixture
def own_task_fleet(redis_url: str, tmp_path: Path, model_server: ModelServer) -> Iterator[Fleet]:
    """A worker, a scheduler and a sidecar on one workspace; approvals off (the model writes
    in functions/ and runs its code, both risky)."""
    fleet = Fleet(redis_url=redis_url, prefix=f"own{uuid.uuid4().hex[:8]}", log_dir=tmp_path)
    (tmp_path / "workspace" / "functions").mkdir(parents=True)
    fleet.extra_env.update(
        ANTHROPIC_API_KEY=model_server.api_key,
        ANTHROPIC_BASE_URL=model_server.url,
        AGENT_APPROVAL="off",
        SIDECAR_SANDBOX="off",
        SIDECAR_DEBOUNCE="0.3",
        HARNESS_STATE_DIR=str(tmp_path / "state"),
    )
    fleet.start("worker", "worker", "--concurrency", "2")
    fleet.start("scheduler", "scheduler")
    fleet.start("sidecar", "sidecar")
    yield fleet
    fleet.stop()


def _registered(runtime: Runtime, function_id: str) -> bool:
    return bool(runtime.redis.hexists(runtime.keys.functions, function_id))


def test_agent_writes_test_runs_fixes_and_schedules_a_function(
    own_task_fleet: Fleet, model_server: ModelServer
) -> None:
    # Given the fleet up (the agent's handler and the sidecar's heartbeat registered)
    runtime = runtime_for(own_task_fleet)
    wait_until(
        lambda: _registered(runtime, HANDLE_MESSAGE) and _registered(runtime, "sidecar-heartbeat"),
        timeout=FLEET_WAIT_S,
        what=f"the worker and the sidecar to register\n{own_task_fleet.logs()}",
    )
    # and a model that writes a buggy cron function, runs it, reads the run, fixes, reruns
    edit = {"path": "functions/tick.py", "edits": [{"old_text": BUG, "new_text": FIX}]}
    model_server.script(
        Reply.tool("write", {"path": "functions/tick.py", "content": BUGGY}),
        Reply.tool("function_run", {"function": "tick", "data": TEST_DATA}),
        Reply.tool("runs_show", {"function": "tick"}),
        Reply.tool("edit", edit),
        Reply.tool("function_run", {"function": "tick", "data": TEST_DATA}),
        Reply.answer("tick works and runs every second."),
    )

    # When the person asks for the task
    chat = ChatSession(runtime, "cli-own-task", timeout=120)
    exchange = chat.send("every second, note the year")
    run_id = run_id_for(HANDLE_MESSAGE, exchange.event_id)
    wait_until(
        lambda: (run := runtime.ledger.run(run_id)) is not None and run.status == "completed",
        timeout=180,
        what=f"the turn to complete\n{own_task_fleet.logs()}",
    )

    # Then the first test run failed on the bug, runs_show gave the error, the second passed
    results = [str(r["content"]) for r in anthropic_tool_results(model_server.requests[-1].body)]
    _written, failed, shown, _edited, passed = results
    assert failed.startswith("tick failed (run r") and "size" in failed, failed
    assert "failed" in shown and "size" in shown, shown
    assert passed.startswith("tick completed (run r"), passed
    assert json.dumps({"year": "2026", "size": 0}) in passed, passed
    assert "previous text" not in passed, passed
    # And the scheduler's tick runs the fixed function to completion
    wait_until(
        lambda: any(
            r.function_id == "tick" and r.status == "completed" and r.event["name"] == CRON_TICK
            for r in runtime.ledger.recent(500)
        ),
        timeout=60,
        what=f"a completed scheduled run of tick\n{own_task_fleet.logs()}",
    )
    (own_task_fleet.log_dir / "workspace" / "functions" / "tick.py").unlink()
