"""The tool calls of one model reply: approvals asked first, in order, then the calls run at
once, each recorded once, and a crash mid-batch runs again only what was not recorded."""

from __future__ import annotations

import json
import threading
from typing import Any

from harness.addresses import CAN_ANSWER_META
from harness.agent.approvals.grants import OWNER
from harness.events import APPROVAL_REQUESTED, MESSAGE_RECEIVED, ApprovalAnswered
from harness.records.stores import redis_records
from harness.runtime import Runtime, publish
from harness.runtime.testing import drain
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import AgentRig, KillsTheWorkerOnce
from tests.fakes.model_server import Reply, ScriptedCall, anthropic_tool_results
from tests.runtime_fixtures import ManualClock

WAIT = 10.0  # seconds a tool waits for another before it gives up (never reached when green)


class Counter(Tool[ToolParams]):
    """Counts its calls; with a `barrier`, each call waits until the other party arrives."""

    description = "Counts."
    parameters = ToolParams

    def __init__(self, name: str, barrier: threading.Barrier | None = None) -> None:
        self.name = name
        self.barrier = barrier
        self.calls = 0

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        self.calls += 1
        if self.barrier is not None:
            self.barrier.wait(WAIT)  # raises (an error result) unless the other call overlaps
        return f"{self.name} done"


class KillsOnceTheFirstIsRecorded(KillsTheWorkerOnce):
    """Kills the worker once the step `tool:0` of run `run_id` is in the journal."""

    def __init__(self, runtime: Runtime) -> None:
        super().__init__()
        self.runtime = runtime
        self.run_id = ""

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        if self.calls == 0:
            journal = self.runtime.keys.journal(self.run_id)
            while not self.runtime.redis.hexists(journal, "tool:0"):
                threading.Event().wait(0.01)  # the other call's result is not recorded yet
        return super().run(params, ctx)


def _tool_results(agent: AgentRig, request: int) -> list[str]:
    return [str(b["content"]) for b in anthropic_tool_results(agent.model.requests[request].body)]


def test_two_slow_calls_of_one_reply_overlap_and_each_is_recorded_once(agent: AgentRig) -> None:
    # Given two tools that each wait until the other is running
    barrier = threading.Barrier(2)
    first, second = Counter("slow_a", barrier), Counter("slow_b", barrier)
    agent.deps.tools.register(first)
    agent.deps.tools.register(second)
    agent.model.script(
        Reply.tools(ScriptedCall("slow_a"), ScriptedCall("slow_b")), Reply.answer("Both done.")
    )
    # When the model calls both in one reply
    run_id = agent.say("go")
    # Then they met (ran at once), each ran once, and the model got both results in order
    assert _tool_results(agent, 1) == ["slow_a done", "slow_b done"]
    assert (first.calls, second.calls) == (1, 1)
    tool_steps = [k for k in agent.runtime.ledger.journal(run_id) if k.startswith("tool:")]
    assert sorted(tool_steps) == ["tool:0", "tool:1"]
    assert agent.replies() == ["Both done."]


def test_a_worker_dying_mid_batch_runs_again_only_the_unrecorded_call(
    agent: AgentRig, clock: ManualClock
) -> None:
    # Given a reply calling a counter and a tool that kills the worker once the counter's
    # result is recorded
    counter = Counter("counter")
    killer = KillsOnceTheFirstIsRecorded(agent.runtime)
    agent.deps.tools.register(counter)
    agent.deps.tools.register(killer)
    agent.model.script(
        Reply.tools(ScriptedCall("counter"), ScriptedCall(killer.name)), Reply.answer("Done.")
    )
    killer.run_id = agent.say("go", run=False)
    try:
        drain(agent.runtime)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the worker should have died in the batch")
    # When the run resumes on another worker
    agent.resume(clock)
    # Then the recorded call did not run again, the other did, and the turn finished once
    assert counter.calls == 1, "a call whose step was recorded must not run again"
    assert killer.calls == 2, "the call that was not recorded must run again"
    assert _tool_results(agent, 1) == ["counter done", "work done"]
    assert agent.replies() == ["Done."]


def test_approvals_are_asked_in_call_order_before_any_call_of_the_reply_runs(
    agent: AgentRig,
) -> None:
    # Given a reply with a harmless call and two writes that need a person's yes
    counter = Counter("counter")
    agent.deps.tools.register(counter)
    writes = [
        ScriptedCall("write", {"path": f"functions/{name}.py", "content": "x = 1\n"})
        for name in ("a", "b")
    ]
    agent.model.script(Reply.tools(ScriptedCall("counter"), *writes), Reply.answer("Done."))
    # When it comes in a chat where someone can answer
    _say_where_someone_can_answer(agent, "write both")
    # Then the first write is asked about, and nothing has run yet
    assert [_asked_path(r) for r in _requests(agent)] == ["functions/a.py"]
    assert counter.calls == 0, "no call of the reply may run before every approval is decided"
    # When it is approved, the second write is asked about, still before anything runs
    _approve(agent, _requests(agent)[0])
    assert [_asked_path(r) for r in _requests(agent)] == ["functions/a.py", "functions/b.py"]
    assert counter.calls == 0 and not (agent.workspace / "functions" / "a.py").exists()
    # When that is approved too, every call runs, once
    _approve(agent, _requests(agent)[1])
    assert counter.calls == 1
    assert (agent.workspace / "functions" / "b.py").read_text() == "x = 1\n"
    assert agent.replies()[-1] == "Done."


def _say_where_someone_can_answer(agent: AgentRig, text: str) -> None:
    data = {
        "message": text,
        "session_key": "chat-1",
        "channel": "test",
        "sender": {"id": "u1", "name": "Ana"},
        "destination": {"chat_id": "chat-1"},
        "channel_meta": {CAN_ANSWER_META: True},
    }
    publish({"name": MESSAGE_RECEIVED, "data": data}, runtime=agent.runtime)
    drain(agent.runtime)


def _requests(agent: AgentRig) -> list[dict[str, Any]]:
    return [
        json.loads(fields["event"])["data"]
        for _id, fields in agent.runtime.redis.xrange(agent.runtime.keys.events)
        if fields["name"] == APPROVAL_REQUESTED
    ]


def _asked_path(request: dict[str, Any]) -> str:
    return (
        "functions/a.py"
        if "functions/a.py" in request["summary"]
        else ("functions/b.py" if "functions/b.py" in request["summary"] else request["summary"])
    )


def _approve(agent: AgentRig, request: dict[str, Any]) -> None:
    approval_id = request["approval_id"]
    claim = redis_records(agent.runtime).approvals.decide_unattended(approval_id, "approve", "t")
    answered = ApprovalAnswered(approval_id=approval_id, decision="approve", by="t", at=claim.at)
    publish(answered.to_event(), runtime=agent.runtime)
    drain(agent.runtime)


class Reader(Counter):
    """Reads outside content (like web_fetch)."""

    outside_content = True


class Risky(Counter):
    """Acts on the world (like an MCP tool of a server not marked safe)."""

    risky = True


def test_a_risky_call_after_an_outside_read_in_the_same_reply_still_asks(
    agent: AgentRig,
) -> None:
    # Given a session grant for a risky tool, and a reply that reads outside content first
    reader, risky = Reader("fetch_page"), Risky("risky_tool")
    agent.deps.tools.register(reader)
    agent.deps.tools.register(risky)
    redis_records(agent.runtime).approvals.grant("chat-1", OWNER, "risky_tool")
    agent.model.script(
        Reply.tools(ScriptedCall("fetch_page"), ScriptedCall("risky_tool")), Reply.answer("Ok.")
    )
    # When it comes in a chat where someone can answer
    _say_where_someone_can_answer(agent, "fetch, then act")
    # Then the risky call asks despite the grant, as when the read ran before it was decided
    (request,) = _requests(agent)
    assert request["tool"] == "risky_tool" and "outside content" in request["summary"], request
    assert risky.calls == 0
