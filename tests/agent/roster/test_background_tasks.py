"""Background delegation to a named agent: a task id, then `task_status`, `task_wait` and
`task_cancel` on it."""

from __future__ import annotations

import json
from typing import Any

from harness.agent.delegation import SUBAGENT_FUNCTION
from harness.events import MESSAGE_HANDLER, MESSAGE_RECEIVED, TASK_FINISHED
from harness.runtime import publish, run_id_for
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig
from tests.agent.roster.test_named_delegation import tool_results, write_agent
from tests.fakes.model_match import opened_with
from tests.fakes.model_server import Reply


def say(
    agent: AgentRig, text: str, event_id: str, session: str = "chat-1", *, run: bool = True
) -> str:
    """Send a message with a known event id (so the task ids are known before the turn), run
    everything due (unless not `run`), and return the turn's run id."""
    data = {
        "message": text, "session_key": session, "channel": "test",
        "sender": {"id": "u1", "name": "Ana"}, "destination": {"chat_id": session},
    }  # fmt: skip
    publish({"name": MESSAGE_RECEIVED, "id": event_id, "data": data}, runtime=agent.runtime)
    if run:
        drain(agent.runtime)
    return run_id_for(MESSAGE_HANDLER, event_id)


def finish_events(agent: AgentRig, task_id: str) -> list[dict[str, Any]]:
    """The data of every `agent.task.finished` published for `task_id`, in order."""
    events = [
        json.loads(fields["event"])["data"]
        for _id, fields in agent.runtime.redis.xrange(agent.runtime.keys.events)
        if fields["name"] == TASK_FINISHED
    ]
    return [data for data in events if data["run_id"] == task_id]


def task_of(event_id: str) -> str:
    """The task id of the first delegation of the turn answering `event_id`."""
    return run_id_for(SUBAGENT_FUNCTION, f"{run_id_for(MESSAGE_HANDLER, event_id)}:delegate:0")


def results(agent: AgentRig) -> list[str]:
    """The text of every tool result of the last model request."""
    return [str(r["content"]) for r in tool_results(agent.model.requests[-1].body)]


def test_background_task_is_running_then_wait_returns_its_answer(agent: AgentRig) -> None:
    # Given a researcher, and a turn that starts it in the background, checks it, waits (each
    # conversation's replies its own: the researcher may think before the turn's next think)
    write_agent(agent.workspace, "researcher", "description: Finds sources.")
    task_id = task_of("m1")
    agent.model.script_for(
        opened_with("research tea"),
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.tool("task_status", {"task_id": task_id}),
        Reply.tool("task_wait", {"task_id": task_id, "timeout": "5m"}),
        Reply.answer("It says tea is green."),
    )
    agent.model.script_for(opened_with("find tea"), Reply.answer("Tea is green."))

    # When the turn runs
    run_id = say(agent, "research tea", "m1")

    # Then the delegation gave the task id, the status said running, the wait returned the
    # answer, and the child ran under the parent without posting to the chat itself
    bodies = [r.body for r in agent.model.requests if opened_with("research tea")("", r.body)]
    started = [str(r["content"]) for r in tool_results(bodies[1])]
    assert task_id in started[0]
    assert f"task {task_id} is running" in str(tool_results(bodies[2])[-1]["content"])
    assert "Tea is green." in str(tool_results(bodies[3])[-1]["content"])
    assert agent.replies() == ["It says tea is green."]
    child = agent.runtime.ledger.run(task_id)
    assert child is not None and child.status == "completed"
    assert child.parent is not None and child.parent.run_id == run_id and child.parent.detached


def finished_task(agent: AgentRig, tool: str) -> str:
    """A researcher task that chat-1's turn (message "m1") started and that then finished,
    with the next turn's model calling `tool` on it and answering. Returns the task id."""
    write_agent(agent.workspace, "researcher", "description: Finds sources.")
    task_id = task_of("m1")
    agent.model.script(
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.answer("Started."),
        Reply.tool(tool, {"task_id": task_id}),  # the next turn
        Reply.answer("That is all."),
    )
    agent.model.script_for(opened_with("find tea"), Reply.answer("Tea is green."))
    say(agent, "research tea", "m1")
    return task_id


def test_wait_for_a_finished_task_returns_at_once(agent: AgentRig) -> None:
    # Given a background task that finished after the turn that started it
    finished_task(agent, "task_wait")

    # When a later turn of the same chat waits for it
    run_id = say(agent, "what did it find?", "m2")

    # Then the wait returned the answer without waiting, and the turn ended
    assert "Tea is green." in results(agent)[-1]
    record = agent.runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed"


def test_cancel_stops_a_background_task(agent: AgentRig) -> None:
    # Given a turn that starts a researcher in the background and cancels it at once
    write_agent(agent.workspace, "researcher", "description: Finds sources.")
    task_id = task_of("m1")
    agent.model.script(
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.tool("task_cancel", {"task_id": task_id}),
        Reply.answer("Stopped it."),
        Reply.tool("task_status", {"task_id": task_id}),  # the next turn
        Reply.answer("It was cancelled."),
    )

    # When the turn runs, and a later turn asks for the task's state
    say(agent, "research tea, no wait, stop", "m1")
    say(agent, "is it stopped?", "m2")

    # Then the child never called the model, its run is cancelled, the status says so, and
    # one finish event says it was cancelled, with the reason
    assert len(agent.model.requests) == 5
    child = agent.runtime.ledger.run(task_id)
    assert child is not None and child.status == "cancelled"
    assert results(agent)[-1] == f"task {task_id} is cancelled"
    [finished] = finish_events(agent, task_id)
    assert finished["status"] == "cancelled"
    assert "cancelled by its parent run" in finished["error"]


def test_another_chat_cannot_touch_a_task(agent: AgentRig) -> None:
    # Given a background task started in chat-1
    finished_task(agent, "task_cancel")

    # When a turn of another chat tries to cancel it
    say(agent, "cancel their task", "m2", session="chat-2")

    # Then it is refused as unknown
    [result] = tool_results(agent.model.requests[-1].body)
    assert result.get("is_error") is True
    assert "no task" in str(result["content"])
