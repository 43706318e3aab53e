"""Every ending of a background delegation (completed, failed, cancelled) publishes
`agent.task.finished` exactly once, with its status and error, and a parent in `task_wait`
learns of it at once."""

from __future__ import annotations

import pytest

from harness.agent.deps import build_deps, set_agent_deps
from harness.runtime.kicker import RecordingKicker, kick_all
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.agent.roster.test_background_tasks import finish_events, results, say, task_of
from tests.agent.roster.test_named_delegation import write_agent
from tests.agent.test_budgets import CALL, MODEL, priced  # noqa: F401  (a fixture, by name)
from tests.fakes.model_match import opened_with
from tests.fakes.model_server import Reply


def test_completed_task_publishes_one_finish_event(agent: AgentRig) -> None:
    # Given a turn that starts a researcher in the background, which answers
    write_agent(agent.workspace, "researcher", "description: Finds sources.")
    task_id = task_of("m1")
    agent.model.script(
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.answer("Started."),
    )
    agent.model.script_for(opened_with("find tea"), Reply.answer("Tea is green."))

    # When everything runs
    say(agent, "research tea", "m1")

    # Then one finish event says it completed, with its answer
    [finished] = finish_events(agent, task_id)
    assert finished["status"] == "completed"
    assert finished["answer"] == "Tea is green."
    assert finished["agent"] == "researcher"


def test_failed_task_publishes_one_finish_event_and_ends_the_wait(agent: AgentRig) -> None:
    # Given a turn that starts a researcher in the background and waits for it, and a
    # researcher whose model call fails (not a schema mismatch)
    write_agent(agent.workspace, "researcher", "description: Finds sources.")
    task_id = task_of("m1")
    agent.model.script(
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.tool("task_wait", {"task_id": task_id, "timeout": "1h"}),
        Reply.answer("It failed."),
    )
    agent.model.script_for(
        opened_with("find tea"), Reply.error(400, "the model refused the request")
    )

    # When everything runs (the clock never moves: the wait cannot time out)
    run_id = say(agent, "research tea", "m1")

    # Then one finish event says it failed and why, and the wait reported the failure
    [finished] = finish_events(agent, task_id)
    assert finished["status"] == "failed"
    assert "refused" in finished["error"]
    assert results(agent)[-1].startswith(f"task {task_id} failed:"), results(agent)
    record = agent.runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed"


def test_cancelling_the_parent_cancels_its_background_task(agent: AgentRig) -> None:
    # Given a turn that started a researcher in the background and waits for it, the
    # researcher not yet run (its kick held back)
    write_agent(agent.workspace, "researcher", "description: Finds sources.")
    task_id = task_of("m1")
    agent.model.script(
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.tool("task_wait", {"task_id": task_id, "timeout": "1h"}),
    )
    parent_id = say(agent, "research tea", "m1", run=False)
    kicker = agent.runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    drain(agent.runtime, hold={task_id})  # the turn, up to its wait
    held = list(kicker.pending)
    kicker.pending.clear()
    assert [k.run_id for k in held] == [task_id]

    # When the turn is cancelled (as `harness runs cancel` does), and everything runs
    _live, kicks = agent.runtime.ledger.request_cancel(parent_id, "stop", agent.runtime.now_ms())
    kick_all(kicker, kicks)
    drain(agent.runtime)
    kicker.pending.extend(held)
    drain(agent.runtime)

    # Then the researcher never called the model, it ended cancelled, its finish event says
    # so, and nothing is left queued
    assert len(agent.model.requests) == 2
    assert status_of(agent, parent_id) == "cancelled"
    assert status_of(agent, task_id) == "cancelled"
    [finished] = finish_events(agent, task_id)
    assert finished["status"] == "cancelled"
    assert f"parent run {parent_id} was cancelled" in finished["error"]
    assert agent.runtime.redis.zcard(agent.runtime.keys.ready) == 0


def status_of(agent: AgentRig, run_id: str) -> str:
    record = agent.runtime.ledger.run(run_id)
    assert record is not None, f"run {run_id} has no record"
    return record.status


@pytest.mark.usefixtures("priced")
def test_failed_task_reports_what_it_spent_before_failing(agent: AgentRig) -> None:
    # Given $1.00 per model call, and a background researcher that makes one call (a tool
    # call) and then fails
    deps = build_deps(make_settings(agent.workspace, agent.model, agent_model=MODEL))
    set_agent_deps(deps)
    agent.deps = deps
    (agent.workspace / "note.md").write_text("hi\n")
    write_agent(agent.workspace, "researcher", "description: Finds sources.")
    task_id = task_of("m1")
    agent.model.script(
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.answer("Started."),
    )
    agent.model.script_for(
        opened_with("find tea"),
        Reply.tool("read", {"path": "note.md"}, **CALL),
        Reply.error(400, "the model refused the request"),
    )
    # When everything runs
    say(agent, "research tea", "m1")
    # Then the failure's finish event carries the $1.00 its recorded call cost
    [finished] = finish_events(agent, task_id)
    assert finished["status"] == "failed"
    assert finished["cost_usd"] == 1.0, finished
