"""The agent on the durable runtime, against the scripted model server through the SDKs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import NOT_CONFIGURED_REPLY, handle_message
from harness.runtime import Singleton
from harness.runtime.functions import Function, FunctionRegistry
from harness.runtime.testing import drain
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import AgentRig, KillsTheWorkerOnce, make_settings, user_texts
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.runtime_fixtures import ManualClock


def test_agent_runs_a_multi_step_tool_conversation_on_anthropic(agent: AgentRig) -> None:
    # Given a model that writes a file, reads it back, then answers
    agent.model.script(
        Reply.tool("write", {"path": "notes/todo.txt", "content": "buy milk"}),
        Reply.tool("read", {"path": "notes/todo.txt"}),
        Reply.answer("Saved your todo."),
    )
    # When the user writes
    agent.say("remember to buy milk")
    # Then the tools ran in the workspace, the model saw their results, and the reply went out
    assert (agent.workspace / "notes/todo.txt").read_text() == "buy milk"
    third = agent.model.requests[2].body
    assert any("buy milk" in str(r["content"]) for r in anthropic_tool_results(third))
    assert agent.replies() == ["Saved your todo."]
    roles = [line["message"]["role"] for line in agent.session_lines()]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_agent_runs_a_tool_conversation_on_openai(agent: AgentRig, tmp_path: Any) -> None:
    settings = make_settings(
        agent.workspace, agent.model, llm_provider="openai", openai_api_key=agent.model.api_key,
        openai_base_url=agent.model.openai_url, anthropic_api_key=None, anthropic_base_url=None,
    )  # fmt: skip
    set_agent_deps(build_deps(settings))
    agent.model.script(Reply.tool("ls", {"path": "."}), Reply.answer("You have a SOUL.md."))
    agent.say("what is in my workspace?")
    assert [r.api for r in agent.model.requests] == ["openai", "openai"]
    tool_messages = [m for m in agent.model.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_messages and "SOUL.md" in tool_messages[0]["content"]
    assert agent.replies() == ["You have a SOUL.md."]


def test_bad_tool_calls_go_back_to_the_model_as_errors(agent: AgentRig) -> None:
    agent.model.script(
        Reply.tool("read", {"nonsense": 1}),
        Reply.tool("no_such_tool", {}),
        Reply.tool("read", {"path": "../../etc/passwd"}),
        Reply.answer("I could not do that."),
    )
    run_id = agent.say("do odd things")
    results = anthropic_tool_results(agent.model.requests[3].body)
    assert [r.get("is_error") for r in results] == [True, True, True]
    assert "path" in str(results[0]["content"])
    assert "no_such_tool" in str(results[1]["content"])
    assert "outside" in str(results[2]["content"]).lower()
    assert agent.runtime.ledger.run(run_id).status == "completed"  # type: ignore[union-attr]


def test_crash_mid_loop_replays_without_calling_the_model_again(
    agent: AgentRig, clock: ManualClock
) -> None:
    # Given a worker that dies in its first tool step, after the first think was recorded
    tool = KillsTheWorkerOnce()
    run_id = agent.die_in_tool(tool)
    assert len(agent.model.requests) == 1
    # When the lease expires and the run resumes
    agent.resume(clock)
    # Then the completed think was not repeated, the tool ran again, and the turn finished
    assert len(agent.model.requests) == 2, "the first think must be replayed from the journal"
    assert tool.calls == 2, "the unrecorded tool step must run again"
    assert agent.runtime.ledger.run(run_id).status == "completed"  # type: ignore[union-attr]
    roles = [line["message"]["role"] for line in agent.session_lines()]
    assert roles == ["user", "assistant", "tool", "assistant"], "each message must appear once"


class _NotesAndDiesOnce(KillsTheWorkerOnce):
    """Writes `MEMORY.md` (which the system prompt shows) before dying, once."""

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        (ctx.workspace / "MEMORY.md").write_text(f"note {self.calls + 1}\n", encoding="utf-8")
        return super().run(params, ctx)


def test_a_resumed_turn_builds_the_next_prompt_after_the_rerun_tool(
    agent: AgentRig, clock: ManualClock
) -> None:
    # Given a tool that changes the memory file and kills the worker the first time, after
    # the first think was recorded
    agent.die_in_tool(_NotesAndDiesOnce())
    # When the run resumes (its first think replayed, the tool run again)
    agent.resume(clock)
    # Then the second model call shows the memory as the rerun tool left it: its prompt was
    # built after the tool, not before the replayed think
    second = str(agent.model.requests[1].body["system"])
    assert "note 2" in second and "note 1" not in second, second[-300:]


class _SendParams(ToolParams):
    text: str


def _register_interrupting_tool(agent: AgentRig) -> None:
    class Interrupt(Tool[_SendParams]):
        name = "wait_for_user"
        description = "Meanwhile the user writes again."
        parameters = _SendParams

        def run(self, params: _SendParams, ctx: ToolContext) -> str:
            agent.say(params.text, run=False)
            from harness.runtime.executor import advance

            for kick in list(agent.runtime.kicker.pending):  # type: ignore[attr-defined]
                advance(agent.runtime, kick.run_id, kick.seq)
            agent.runtime.kicker.pending.clear()  # type: ignore[attr-defined]
            return "waited"

    agent.deps.tools.register(Interrupt())


def test_steer_mode_shows_a_new_message_before_the_next_think(agent: AgentRig) -> None:
    _register_interrupting_tool(agent)
    agent.model.script(
        Reply.tool("wait_for_user", {"text": "actually, make it tea"}), Reply.answer("Tea it is.")
    )
    agent.say("make coffee")
    assert "actually, make it tea" in user_texts(agent.model.requests[1].body)
    assert agent.replies() == ["Tea it is."]
    lines = agent.session_lines()
    texts = [line["message"]["text"] for line in lines if line["message"]["role"] == "user"]
    assert texts == ["make coffee", "actually, make it tea"]


def test_cancel_mode_stops_the_run_and_answers_the_new_message(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    spec = handle_message.spec.model_copy(
        update={"singleton": Singleton(key="event.data.session_key", mode="cancel")}
    )
    registry.register(Function(spec=spec, handler=handle_message.handler))
    agent.runtime.register_functions()
    _register_interrupting_tool(agent)
    agent.model.script(
        Reply.tool("wait_for_user", {"text": "stop, do this instead"}), Reply.answer("Doing it.")
    )
    first = agent.say("long job")
    assert agent.runtime.ledger.run(first).status == "cancelled"  # type: ignore[union-attr]
    assert agent.replies() == ["Doing it."]
    second = agent.model.requests[1].body
    assert user_texts(second)[-1] == "stop, do this instead"
    # the interrupted tool call got a result, so the transcript stays valid
    assert anthropic_tool_results(second), "the dangling tool call needs a result"


def test_fallback_model_takes_over_after_repeated_transient_errors(
    agent: AgentRig, clock: ManualClock
) -> None:
    settings = make_settings(
        agent.workspace, agent.model, fallback_llm_provider="openai",
        openai_api_key=agent.model.api_key, openai_base_url=agent.model.openai_url,
    )  # fmt: skip
    set_agent_deps(build_deps(settings))
    agent.model.script(
        Reply.error(529, "overloaded"), Reply.error(500, "boom"), Reply.answer("From the fallback.")
    )
    agent.say("hello")
    for _ in range(3):
        clock.advance(30)
        drain(agent.runtime)
    assert [r.api for r in agent.model.requests] == ["anthropic", "anthropic", "openai"]
    assert agent.replies() == ["From the fallback."]


@pytest.mark.parametrize(("retry_for", "answered"), [(300.0, True), (0.0, False)])
def test_a_model_rate_limited_more_times_than_the_retries_still_answers_within_the_budget(
    agent: AgentRig, clock: ManualClock, retry_for: float, answered: bool
) -> None:
    # Given a model rate limited five times in a row (the agent's step allows three retries)
    set_agent_deps(build_deps(make_settings(
        agent.workspace, agent.model, agent_model_retry_for=retry_for,
    )))  # fmt: skip
    agent.model.script(*[Reply.error(429, "rate_limit_error")] * 5, Reply.answer("Here at last."))
    # When a message arrives and a few minutes pass
    run_id = agent.say("hello")
    for _ in range(8):
        clock.advance(30)
        drain(agent.runtime)
    # Then within AGENT_MODEL_RETRY_FOR the call is retried until it answers; without a
    # budget the turn fails after its retries
    record = agent.runtime.ledger.run(run_id)
    assert record is not None
    if answered:
        assert agent.replies() == ["Here at last."] and record.status == "completed"
        assert len(agent.model.requests) == 6
    else:
        assert record.status == "failed" and "429" in record.error, record
        assert len(agent.model.requests) == 4


def test_prompt_prefix_is_identical_across_turns(agent: AgentRig, clock: ManualClock) -> None:
    agent.model.script(Reply.answer("one"), Reply.answer("two"))
    agent.say("first")
    agent.say("second")
    systems = [r.body["system"] for r in agent.model.requests]
    assert json.dumps(systems[0]) == json.dumps(systems[1]), "the cached prefix must not change"
    assert "cache_control" in systems[0][-1], "the stable prefix must end in a cache breakpoint"
    # the runtime facts (the time) ride after the conversation, outside the cached prefix
    tail = agent.model.requests[1].body["messages"][-1]["content"][-1]
    assert "Runtime" in tail["text"] and "cache_control" not in tail


def test_without_a_model_the_agent_says_how_to_configure_one(
    agent: AgentRig, tmp_path: Any
) -> None:
    unconfigured = make_settings(
        agent.workspace, agent.model, anthropic_api_key=None, anthropic_base_url=None
    )
    set_agent_deps(build_deps(unconfigured))
    agent.say("hello?")
    assert agent.replies() == [NOT_CONFIGURED_REPLY]
    assert agent.model.requests == []
