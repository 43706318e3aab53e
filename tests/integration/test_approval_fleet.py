"""An approval survives the worker: the turn waits for a yes, the worker is killed, another
one starts, and the answer resumes the run there (real Redis, Celery worker subprocesses)."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent.handlers import HANDLE_MESSAGE
from harness.agent.progress import Progress
from harness.chat_client import ChatSession
from harness.events import APPROVAL_REQUESTED, REPLY_READY
from harness.runtime import Runtime, run_id_for
from harness.runtime.keys import Keys
from tests.fakes.model_server import ModelServer, Reply
from tests.integration.conftest import FLEET_WAIT_S, Fleet, runtime_for, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def agent_fleet(redis_url: str, tmp_path: Path, model_server: ModelServer) -> Iterator[Fleet]:
    fleet = Fleet(redis_url=redis_url, prefix=f"apr{uuid.uuid4().hex[:8]}", log_dir=tmp_path)
    fleet.extra_env.update(
        ANTHROPIC_API_KEY=model_server.api_key, ANTHROPIC_BASE_URL=model_server.url
    )
    yield fleet
    fleet.stop()


def _start_worker(fleet: Fleet, runtime: Runtime, name: str) -> int:
    proc = fleet.start(name, "worker", "--concurrency", "2")
    wait_until(
        lambda: runtime.redis.hexists(Keys(fleet.prefix).functions, "answer-approval"),
        timeout=FLEET_WAIT_S,
        what=f"the worker to register the approval functions\n{fleet.logs()}",
    )
    return proc.pid


def _runs(runtime: Runtime) -> str:
    return "\n".join(f"{r.function_id} {r.status}" for r in runtime.ledger.recent(20))


def _replies(runtime: Runtime) -> list[str]:
    return [
        str(json.loads(fields["event"])["data"]["response"])
        for _id, fields in runtime.redis.xrange(runtime.keys.events)
        if fields["name"] == REPLY_READY
    ]


def _approval_id(runtime: Runtime) -> str | None:
    for _id, fields in runtime.redis.xrange(runtime.keys.events):
        if fields["name"] == APPROVAL_REQUESTED:
            return str(json.loads(fields["event"])["data"]["approval_id"])
    return None


def test_approval_after_the_worker_was_killed_while_waiting_resumes_the_run(
    agent_fleet: Fleet, model_server: ModelServer
) -> None:
    # Given a worker, and a model that wants to write in functions/, then answers
    runtime = runtime_for(agent_fleet)
    agent_fleet.start("scheduler", "scheduler")
    first = _start_worker(agent_fleet, runtime, "worker0")
    model_server.script(
        Reply.tool("write", {"path": "functions/job.py", "content": "ok = True\n"}),
        Reply.answer("Written after your yes."),
    )
    chat = ChatSession(runtime, "cli-approval", can_answer=True, timeout=60)
    exchange = chat.send("write the job")
    run_id = run_id_for(HANDLE_MESSAGE, exchange.event_id)
    # When the turn waits for the approval and its worker is killed outright
    wait_until(
        lambda: (
            (run := runtime.ledger.run(run_id)) is not None
            and (run.status, run.wake_kind) == ("waiting", "wait")
        ),  # not on a model call
        timeout=60,
        what=f"the turn to wait for approval\n{agent_fleet.logs()}",
    )
    os.killpg(first, signal.SIGKILL)
    _start_worker(agent_fleet, runtime, "worker1")
    approval_id = _approval_id(runtime)
    assert approval_id is not None, "the request was not published"
    chat.answer(approval_id, "approve")
    # Then the new worker resumes the run: the file is written and the reply comes
    done = wait_until(
        lambda: (run := runtime.ledger.run(run_id)) is not None and run.status == "completed",
        timeout=60,
        what=f"the turn to complete\n{_runs(runtime)}\n{agent_fleet.logs()}",
    )
    assert done
    assert _replies(runtime) == ["Written after your yes."], _runs(runtime)
    # And the chat client, reading the stream afterwards, sees the request, then the reply
    seen = list(exchange.updates())
    assert [type(u).__name__ for u in seen if not isinstance(u, Progress)] == [
        "ApprovalAsked",
        "ChatReply",
    ]
    workspace = agent_fleet.log_dir / "workspace"
    assert (workspace / "functions" / "job.py").read_text() == "ok = True\n"
