"""A model call holds no worker thread (MODEL_CALLS=gateway): with one worker thread, a
second chat's model call is made while the first chat's is still being answered (real
Redis, a Celery worker subprocess and its model gateway on a thread); a gateway in a process
of its own, as `harness up` runs it, killed mid-stream leaves its call to another gateway
process after the lease, and the chat is answered once."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent.model_calls import MODEL_SERVICE
from harness.events import MESSAGE_RECEIVED, REPLY_READY
from harness.runtime import Runtime, publish
from harness.runtime.call_health import calls_waiting
from harness.runtime.keys import Keys
from tests.fakes.model_server import ModelServer, Reply
from tests.integration.conftest import FLEET_WAIT_S, Fleet, runtime_for, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def gateway_fleet(redis_url: str, tmp_path: Path, model_server: ModelServer) -> Iterator[Fleet]:
    fleet = Fleet(redis_url=redis_url, prefix=f"gw{uuid.uuid4().hex[:8]}", log_dir=tmp_path)
    fleet.extra_env.update(
        ANTHROPIC_API_KEY=model_server.api_key,
        ANTHROPIC_BASE_URL=model_server.url,
        MODEL_CALLS="gateway",
    )
    yield fleet
    fleet.stop()


def _say(runtime: Runtime, text: str, session: str) -> None:
    publish(
        {
            "name": MESSAGE_RECEIVED,
            "data": {
                "message": text, "session_key": session, "channel": "cli",
                "sender": {"id": "u1", "name": "Ana"}, "destination": {"chat_id": session},
            },
        },
        runtime=runtime,
    )  # fmt: skip


def _replies(runtime: Runtime) -> list[str]:
    return [
        str(json.loads(fields["event"])["data"]["response"])
        for _id, fields in runtime.redis.xrange(runtime.keys.events)
        if fields["name"] == REPLY_READY
    ]


def _start(fleet: Fleet, runtime: Runtime, *, own_process: bool) -> None:
    """A scheduler and one worker with one thread; the model gateway on a thread of the
    worker, or (`own_process`) in a `harness gateway` process beside a `--no-gateway` one."""
    fleet.start("scheduler", "scheduler")
    if own_process:
        fleet.start("worker0", "worker", "--concurrency", "1", "--no-gateway")
        fleet.start("gateway0", "gateway")
    else:
        fleet.start("worker0", "worker", "--concurrency", "1")
    wait_until(
        lambda: (
            runtime.redis.hexists(Keys(fleet.prefix).functions, "agent-handle-message")
            and calls_waiting(runtime, MODEL_SERVICE).gateways == 1
        ),
        timeout=FLEET_WAIT_S,
        what=f"the worker to register its functions and one gateway to beat\n{fleet.logs()}",
    )


def test_a_slow_model_call_does_not_hold_the_only_worker_thread(
    gateway_fleet: Fleet, model_server: ModelServer
) -> None:
    # Given one worker with one thread, and a model slow to answer the first chat (its
    # gateway on a thread of the worker; in a process of its own, the test below)
    runtime = runtime_for(gateway_fleet)
    _start(gateway_fleet, runtime, own_process=False)
    model_server.script(Reply.answer("Slow answer.", delay=8), Reply.answer("Quick answer."))
    # When two chats write, the second while the first's model call is still being answered
    _say(runtime, "first", "chat-a")
    assert model_server.wait_until_stalled(FLEET_WAIT_S), gateway_fleet.logs()
    _say(runtime, "second", "chat-b")
    # Then the second chat is answered first, while the first call still stalls
    first = wait_until(
        lambda: _replies(runtime), timeout=FLEET_WAIT_S, what=f"an answer\n{gateway_fleet.logs()}"
    )
    assert first[0] == "Quick answer.", "the second chat waited for the first's model call"
    # And the first is answered too, each call made once
    wait_until(
        lambda: sorted(_replies(runtime)) == ["Quick answer.", "Slow answer."],
        timeout=FLEET_WAIT_S,
        what=f"both answers\n{gateway_fleet.logs()}",
    )
    assert len(model_server.requests) == 2


def test_a_gateway_process_killed_mid_stream_leaves_its_call_to_another(
    gateway_fleet: Fleet, model_server: ModelServer
) -> None:
    # Given a gateway process beside a worker that makes no call, streaming a slow answer
    runtime = runtime_for(gateway_fleet)
    _start(gateway_fleet, runtime, own_process=True)
    model_server.script(Reply.answer("Lost answer.", delay=30), Reply.answer("Kept answer."))
    _say(runtime, "hello", "chat-a")
    assert model_server.wait_until_stalled(FLEET_WAIT_S), gateway_fleet.logs()
    # When that process is killed outright and another gateway process starts
    _kill_group(gateway_fleet, "gateway0")
    gateway_fleet.start("gateway1", "gateway")
    # Then, once the dead one's lease ran out, the other makes the call again, and the chat
    # is answered once, with the second call's answer
    wait_until(
        lambda: _replies(runtime) == ["Kept answer."],
        timeout=FLEET_WAIT_S,
        what=f"the answer\n{gateway_fleet.logs()}",
    )
    assert len(model_server.requests) == 2, "the call was made other than once per lease"
    assert _replies(runtime) == ["Kept answer."]


def _kill_group(fleet: Fleet, name: str) -> None:
    """SIGKILL the process `name` and what it started, as a crash would, and reap it."""
    proc = fleet.procs[name]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
