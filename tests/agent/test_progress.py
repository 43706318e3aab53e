"""Live progress of a session's run: published on think and on each tool call, best effort."""

from __future__ import annotations

import logging

import pytest
import redis

from harness.agent.progress import WRITING, Progress, publish_all, report, subscribe
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from tests.agent.conftest import AgentRig, KillsTheWorkerOnce
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import UNREACHABLE_REDIS_PASSWORD as REDIS_PASSWORD
from tests.runtime_fixtures import ManualClock


def _labels(messages: list[Progress]) -> list[str]:
    """The status labels, leaving out the streamed text (`writing`, see test_live_text)."""
    return [m.label for m in messages if m.state != WRITING]


def test_progress_is_reported_when_the_agent_thinks_and_runs_a_tool(agent: AgentRig) -> None:
    # Given a model that lists the workspace, then answers, and a listener on the session
    agent.model.script(Reply.tool("ls", {"path": "."}), Reply.answer("Done."))
    with subscribe(agent.runtime, "chat-1") as progress:
        # When the user writes in that session
        run_id = agent.say("what is there?")
        received = list(progress.messages(timeout=0))
    # Then the listener saw each think and what the tool did, all for that run
    assert _labels(received) == ["thinking", "listing the workspace", "thinking"], received
    assert [m.detail for m in received if m.state == "running"] == ["ls"]
    assert {m.run_id for m in received} == {run_id}


def test_progress_shows_what_the_tool_does_but_never_a_secret_or_the_content(
    agent: AgentRig,
) -> None:
    # Given a model that writes a file, then searches for a credential
    agent.model.script(
        Reply.tool("write", {"path": "notes/plan.md", "content": "hunter2-content"}),
        Reply.tool("grep", {"pattern": "token=abcdef0123456789xyz", "path": "notes"}),
        Reply.answer("Written."),
    )
    with subscribe(agent.runtime, "chat-1") as progress:
        # When the turn runs
        agent.say("store my plan")
        received = list(progress.messages(timeout=0))
    # Then the status lines say which file and what was searched, with the credential masked
    labels = _labels(received)
    assert "writing notes/plan.md" in labels, labels
    assert "searching for token=[REDACTED]" in labels, labels
    # And neither the file's content nor the credential went out
    dumped = " ".join(m.model_dump_json() for m in received)
    assert "hunter2" not in dumped and "abcdef0123456789xyz" not in dumped, dumped


def test_progress_of_another_session_is_not_received(agent: AgentRig) -> None:
    agent.model.script(Reply.answer("Hi."))
    with subscribe(agent.runtime, "chat-2") as progress:
        agent.say("hello", session="chat-1")
        received = list(progress.messages(timeout=0))
    assert received == [], f"expected nothing for chat-2, got {received}"


def test_a_replayed_step_does_not_report_its_progress_again(
    agent: AgentRig, clock: ManualClock
) -> None:
    # Given a worker that dies once right after running the first tool
    tool = KillsTheWorkerOnce()
    with subscribe(agent.runtime, "chat-1") as progress:
        agent.die_in_tool(tool)
        # When the lease expires and the run is replayed to the end
        agent.resume(clock)
        received = list(progress.messages(timeout=0))
    # Then the memoized think is not reported again; the re-run tool and the new think are
    running = f"running {tool.name}"
    assert _labels(received) == ["thinking", running, running, "thinking"], received


def test_reporting_without_redis_logs_and_does_not_raise(
    unreachable_runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a Redis that cannot be reached
    caplog.set_level(logging.WARNING, logger="harness.agent.progress")
    # When progress is reported
    report(unreachable_runtime, "chat-1", "r1", "thinking")
    # Then the run goes on, and the log says so without the connection's details
    assert "progress of run r1 not published: BusUnavailableError" in caplog.text
    assert REDIS_PASSWORD not in caplog.text


def test_a_subscription_without_redis_is_broken_and_silent(unreachable_runtime: Runtime) -> None:
    with subscribe(unreachable_runtime, "chat-1") as progress:
        assert progress.broken, "a subscription that could not connect must say so"
        assert progress.get(timeout=5) is None
        assert list(progress.messages()) == []


def test_malformed_messages_on_the_channel_are_skipped(runtime: Runtime) -> None:
    with subscribe(runtime, "chat-1") as progress:
        runtime.redis.publish(progress.channel, "not json")
        runtime.redis.publish(progress.channel, '{"state": "thinking"}')
        report(runtime, "chat-1", "r1", "running", "bash")
        received = list(progress.messages(timeout=0))
    assert received == [Progress(run_id="r1", state="running", detail="bash")]


def test_progress_travels_over_a_real_redis(redis_client: redis.Redis) -> None:
    # Given a subscription on a real Redis (where subscribing is asynchronous)
    runtime = Runtime(redis=redis_client, kicker=RecordingKicker(), registry=FunctionRegistry())
    with subscribe(runtime, "chat-1") as progress:
        # When progress is reported right after subscribing
        report(runtime, "chat-1", "r1", "running", "bash")
        # Then it is received, because subscribe waited for Redis to confirm
        received = progress.get(timeout=10)
    assert received == Progress(run_id="r1", state="running", detail="bash")


def test_messages_published_together_reach_each_session_in_order(runtime: Runtime) -> None:
    # Given two sessions watched
    first = Progress(run_id="r1", state=WRITING, text="a", step=1)
    second = Progress(run_id="r1", state=WRITING, text="ab", step=1)
    other = Progress(run_id="r2", state=WRITING, text="x", step=1)
    with subscribe(runtime, "chat-1") as one, subscribe(runtime, "chat-2") as two:
        # When the gateway's tick publishes their messages in one round trip
        publish_all(runtime, [("chat-1", first), ("chat-2", other), ("chat-1", second)])
        # Then each session got its own, in order
        assert list(one.messages(timeout=0)) == [first, second]
        assert list(two.messages(timeout=0)) == [other]


def test_publishing_together_without_redis_logs_and_does_not_raise(
    unreachable_runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="harness.agent.progress")
    publish_all(unreachable_runtime, [("chat-1", Progress(run_id="r1", state=WRITING))])
    assert "progress of 1 runs not published: BusUnavailableError" in caplog.text
