"""The start of a chat turn in few step records: who answers, with what agent file and which
named agents it may call is one step ("route"); the history's length and whether to compact
it before the first think is another ("history"). A run an earlier version began, with the
old steps (`route` the target alone, `agent`, `roster`, `history` the length alone,
`compaction-check`) in its journal, finishes on this version with what those steps recorded."""

from __future__ import annotations

import json
from typing import Any

from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig
from tests.agent.roster.test_named_delegation import write_agent
from tests.fakes.model_server import Reply


def _system(body: dict[str, Any]) -> str:
    return " ".join(block["text"] for block in body["system"])


def _seed(agent: AgentRig, run_id: str, steps: dict[str, Any]) -> None:
    """Write `steps` (key: value) into the run's journal as an earlier version recorded them."""
    now = agent.runtime.now_ms()
    records = {
        key: json.dumps({"s": now, "t": now, "n": 1, "k": "run", "v": value})
        for key, value in steps.items()
    }
    agent.runtime.redis.hset(agent.runtime.keys.journal(run_id), mapping=records)


def test_a_plain_message_records_six_steps_in_its_turn(agent: AgentRig) -> None:
    # Given a workspace with a named agent the chat's agent may call
    write_agent(agent.workspace, "helper", "description: Helps.")
    agent.model.script(Reply.answer("Hi."))
    # When a message is answered without tools
    run_id = agent.say("hello")
    # Then the turn recorded its arrival, route, history, inbox, think and reply, nothing more
    journal = agent.runtime.ledger.journal(run_id)
    expected = ["arrival:0", "history:0", "inbox:0", "reply:0", "route:0", "think:0"]
    assert sorted(journal) == expected, f"got {sorted(journal)}"
    # And the route step holds the agents it may call, which the model was offered
    assert journal["route:0"]["v"]["delegates"] == {"helper": "Helps."}
    (request,) = agent.model.requests
    assert "delegate_to_helper" in {t["name"] for t in request.body["tools"]}
    assert journal["history:0"]["v"] == {"count": 1, "compact": False}


def test_a_turn_an_earlier_version_began_uses_its_recorded_roster_and_history(
    agent: AgentRig,
) -> None:
    # Given a run an earlier version began: the default agent chosen, a named agent "gone"
    # read from the roster then (its file since deleted), the history's length recorded alone
    agent.model.script(Reply.answer("Hi again."))
    run_id = agent.say("hello", run=False)
    _seed(agent, run_id, {
        "arrival:0": {"redelivered": [], "acknowledged": False},
        "route:0": "main",
        "roster:0": {"gone": "Was here."},
        "history:0": 1,
    })  # fmt: skip
    # When this version runs it
    drain(agent.runtime)
    # Then the model was offered the agent the old roster step read, the first compaction
    # decision was its own step as then, and the turn answered
    (request,) = agent.model.requests
    assert "delegate_to_gone" in {t["name"] for t in request.body["tools"]}
    assert "`delegate_to_gone`: Was here." in _system(request.body)
    journal = agent.runtime.ledger.journal(run_id)
    assert journal["compaction-check:0"]["v"] is False
    assert journal["route:0"]["v"] == "main" and journal["history:0"]["v"] == 1
    assert agent.replies() == ["Hi again."]


def test_a_named_agents_turn_an_earlier_version_began_uses_the_file_it_read(
    agent: AgentRig,
) -> None:
    # Given a run an earlier version began for agent "coder", whose file it read in its own
    # "agent" step; the file on disk now says something else
    write_agent(agent.workspace, "coder", "description: Codes.", "You are the new coder.")
    agent.model.script(Reply.answer("Coded."))
    run_id = agent.say("code", run=False)
    old_file = {"name": "coder", "description": "Codes.", "instructions": "You are the old coder."}
    _seed(agent, run_id, {"route:0": "coder", "agent:0": old_file})
    # When this version runs it
    drain(agent.runtime)
    # Then it answered as the file the old step read
    (request,) = agent.model.requests
    assert "You are the old coder." in _system(request.body)
    assert "You are the new coder." not in _system(request.body)
    assert agent.replies() == ["Coded."]
