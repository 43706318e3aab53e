"""The agent's tools for its own tasks: `functions_list`, `function_run` (risky, durable) and
`runs_show`, limited to the functions of the workspace's `functions/` and to runs of those
functions and of the chat asking."""

from __future__ import annotations

import json
from typing import Any

from harness.agent.approvals.policy import ApprovalPolicy
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE
from harness.events import SUBAGENT_HANDLER
from harness.redaction import register_secret
from harness.runtime import Context, cron, event, function
from harness.runtime.function_sources import FILE_SOURCE, Origin, replace_source
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.tools.function_run import LOAD_WAIT_SECONDS, STALE_NOTE
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.fakes.workspace_functions import serve_as_workspace_function
from tests.runtime_fixtures import ManualClock

SECRET = "Zq8SecretFromTheEnvironment"


def _tools_on(agent: AgentRig, **settings: Any) -> None:
    """Rebuild the agent with approval off (function_run is risky) and `settings`."""
    values: dict[str, Any] = {"agent_approval": "off", **settings}
    agent.deps = build_deps(make_settings(agent.workspace, agent.model, **values))
    set_agent_deps(agent.deps)


def _serve_job(agent: AgentRig, registry: FunctionRegistry, calls: list[dict[str, Any]]) -> None:
    """Serve `job` as a workspace function: it doubles `n`, or fails on a missing `n` with an
    error that carries the secret."""

    @function(id="job", trigger=cron("0 7 * * *"), retries=0)
    def job(ctx: Context) -> Any:
        calls.append(dict(ctx.event.data))
        if "n" not in ctx.event.data:
            raise KeyError(f"n is missing (token {SECRET})")
        return {"doubled": ctx.event.data["n"] * 2}

    serve_as_workspace_function(agent.runtime, registry, job)


def _results(agent: AgentRig) -> list[str]:
    """The text of every tool result the model read, in order."""
    final = agent.model.requests[-1].body
    return [str(r["content"]) for r in anthropic_tool_results(final)]


def test_functions_list_shows_only_workspace_functions_with_triggers_and_last_runs(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a workspace function that ran once
    _tools_on(agent)
    _serve_job(agent, registry, [])
    agent.model.script(
        Reply.tool("function_run", {"function": "job", "data": {"n": 2}}),
        Reply.tool("functions_list", {}),
        Reply.answer("Listed."),
    )

    # When the model lists its functions
    agent.say("what runs?")

    # Then it reads the function, its cron trigger, next time and completed run, and none of
    # the fleet's functions
    listing = _results(agent)[1]
    assert '- job (job.py): cron "0 7 * * *" (UTC)' in listing, listing
    assert "next cron:" in listing and "completed" in listing, listing
    assert HANDLE_MESSAGE not in listing and SUBAGENT_HANDLER not in listing, listing


def test_function_run_invokes_a_workspace_function_once_and_returns_its_output(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a workspace function
    calls: list[dict[str, Any]] = []
    _tools_on(agent)
    _serve_job(agent, registry, calls)
    agent.model.script(
        Reply.tool("function_run", {"function": "job", "data": {"n": 21}}),
        Reply.answer("It doubles."),
    )

    # When the model test-runs it (the turn suspends while it runs and is replayed after)
    agent.say("try job")

    # Then the function ran once with the data, and the model read its output and run id
    assert calls == [{"n": 21}]
    (result,) = _results(agent)
    assert result.startswith("job completed (run r") and '{"doubled": 42}' in result, result
    assert agent.replies() == ["It doubles."]


def test_function_run_failure_then_runs_show_gives_the_error_with_secrets_masked(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a workspace function that fails with a registered secret in its error
    register_secret(SECRET)
    _tools_on(agent)
    _serve_job(agent, registry, [])
    agent.model.script(
        Reply.tool("function_run", {"function": "job", "data": {}}),
        Reply.tool("runs_show", {"function": "job"}),
        Reply.answer("It needs n."),
    )

    # When the model runs it, then reads its newest run
    agent.say("try job")

    # Then the run's failure reached the model twice, the secret masked each time
    ran, shown = _results(agent)
    assert ran.startswith("job failed (run r") and "n is missing" in ran, ran
    assert "run r" in shown and ": failed" in shown and "n is missing" in shown, shown
    assert SECRET not in ran + shown and "[REDACTED]" in shown


def test_function_run_refuses_a_fleet_function(agent: AgentRig, registry: FunctionRegistry) -> None:
    # Given the agent (the fleet's functions registered, none of them from functions/)
    _tools_on(agent)
    agent.model.script(
        Reply.tool("function_run", {"function": SUBAGENT_HANDLER, "data": {"task": "x"}}),
        Reply.answer("I may not."),
    )

    # When the model tries to invoke the sub-agent function directly
    agent.say("go")

    # Then it is refused and no run of it was started
    (result,) = _results(agent)
    assert "is not one of your functions/" in result, result
    assert not [r for r in agent.runtime.ledger.recent(50) if r.function_id == SUBAGENT_HANDLER]


def test_function_run_sends_an_allowed_event_and_refuses_a_fleet_event(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a workspace function triggered by an event of the agent's own
    seen: list[Any] = []

    @function(id="on-ping", trigger=event("mine/ping"), retries=0)
    def on_ping(ctx: Context) -> None:
        seen.append(ctx.event.data)

    _tools_on(agent)
    serve_as_workspace_function(agent.runtime, registry, on_ping)
    agent.model.script(
        Reply.tool("function_run", {"event": "mine/ping", "data": {"x": 1}}),
        Reply.tool("function_run", {"event": "agent.reply.ready", "data": {"response": "hi"}}),
        Reply.answer("Done."),
    )

    # When the model sends its event, then one of the fleet's
    agent.say("ping")

    # Then its event ran its function; the fleet's event was refused and never published
    sent, refused = _results(agent)
    assert sent.startswith("Sent mine/ping (event ") and seen == [{"x": 1}], sent
    assert "may not publish 'agent.reply.ready'" in refused, refused
    assert agent.replies() == ["Done."]


def test_runs_show_refuses_a_run_of_another_chat(agent: AgentRig) -> None:
    # Given a turn of another chat
    _tools_on(agent)
    agent.model.script(Reply.answer("Hello Bo."))
    other = agent.say("hi", session="chat-2")
    agent.model.script(Reply.tool("runs_show", {"run_id": other}), Reply.answer("I may not."))

    # When the model of chat-1 asks for that run
    agent.say("show it")

    # Then it is refused, saying why, and shows nothing of it
    (result,) = _results(agent)
    assert "belongs to another chat" in result and "Hello Bo" not in result, result


def test_runs_show_shows_a_turn_of_its_own_chat(agent: AgentRig) -> None:
    # Given an earlier turn of this chat
    _tools_on(agent)
    agent.model.script(Reply.answer("First."))
    mine = agent.say("hi")
    agent.model.script(Reply.tool("runs_show", {"run_id": mine[:10]}), Reply.answer("Ok."))

    # When the model asks for it by a prefix of its id
    agent.say("show it")

    # Then it reads the run and its steps
    (result,) = _results(agent)
    assert result.startswith(f"run {mine} of {HANDLE_MESSAGE}: completed"), result
    assert "- step think:0 (run) completed" in result, result


def test_own_task_tools_are_offered_where_the_sidecar_runs_and_function_run_is_risky(
    agent: AgentRig,
) -> None:
    # Given the agent's tools with the sidecar on (the default), and with it off
    on = agent.deps.tools
    off = build_deps(make_settings(agent.workspace, agent.model, sidecar_enabled=False)).tools

    # Then the three tools are offered only with it on
    assert {"functions_list", "function_run", "runs_show"} <= set(on.names())
    assert not {"functions_list", "function_run", "runs_show"} & set(off.names())
    # And function_run asks for approval by default, the two readers do not
    policy = ApprovalPolicy()
    risky = {n: policy.needs_approval(n, {}, risky=on.is_risky(n)) for n in ("function_run",
             "functions_list", "runs_show")}  # fmt: skip
    assert risky == {"function_run": True, "functions_list": False, "runs_show": False}


def test_function_run_arguments_are_checked(agent: AgentRig) -> None:
    # Given the agent
    _tools_on(agent)
    agent.model.script(
        Reply.tool("function_run", {"function": "job", "timeout": "2h"}),
        Reply.answer("Ok."),
    )

    # When the model asks for a wait longer than allowed
    agent.say("go")

    # Then it reads why, and nothing ran
    (result,) = _results(agent)
    assert "at most 10m" in result, json.dumps(result)


def test_function_run_waits_for_the_sidecar_to_load_an_edit_then_says_it_ran_the_old_text(
    agent: AgentRig, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a workspace function whose file was edited after the sidecar read it
    calls: list[dict[str, Any]] = []
    _tools_on(agent)
    _serve_job(agent, registry, calls)
    (agent.workspace / "functions" / "job.py").write_text("# edited\n")
    origin = Origin(source=FILE_SOURCE, file="job.py", digest="0" * 64)
    replace_source(agent.runtime, FILE_SOURCE, {"job": (registry.get("job").spec, origin)}, [])
    agent.model.script(
        Reply.tool("function_run", {"function": "job", "data": {"n": 1}}),
        Reply.answer("Ran."),
    )

    # When the model runs it: the turn sleeps a second at a time while no reload comes
    agent.say("try job")
    assert calls == [], "the function ran before the wait for the reload ended"
    for _ in range(LOAD_WAIT_SECONDS):
        clock.advance(1)
        drain(agent.runtime)

    # Then, the wait over, it ran once, and the model is told it was the previous text
    assert calls == [{"n": 1}]
    (result,) = _results(agent)
    assert result.startswith("job completed") and result.endswith(STALE_NOTE), result
