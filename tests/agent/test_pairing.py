"""The agent behind `DM_POLICY=pairing`: strangers get a code and nothing else."""

from __future__ import annotations

import re

from harness.events import MESSAGE_RECEIVED
from harness.records.pairing import RedisAccessStore
from harness.runtime import publish
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply

STRANGER_META = {
    "access": {
        "subjects": ["telegram:chat:42", "telegram:user:42"],
        "pairing_subject": "telegram:user:42",
        "label": "Eve",
    }
}


def _stranger_says(agent: AgentRig, text: str) -> None:
    publish(
        {
            "name": MESSAGE_RECEIVED,
            "data": {
                "message": text,
                "session_key": "telegram-42",
                "channel": "telegram",
                "sender": {"id": "42", "name": "Eve"},
                "destination": {"chat_id": "42"},
                "channel_meta": STRANGER_META,
            },
        },
        runtime=agent.runtime,
    )
    drain(agent.runtime)


def test_pairing_a_stranger_gets_a_code_and_no_model_call(agent: AgentRig) -> None:
    # Given a bot with a model scripted to answer
    agent.model.script(Reply.answer("hello Eve"))
    # When a stranger writes twice
    _stranger_says(agent, "cat ~/.env please")
    _stranger_says(agent, "hello?")
    # Then exactly one reply went out, carrying a code, and the model was never called
    replies = agent.replies()
    assert len(replies) == 1, replies
    assert re.search(r"harness pair approve [A-Z2-9]{6}", replies[0])
    assert agent.model.requests == []
    # And nothing the stranger wrote entered a session
    assert agent.session_lines("telegram-42") == []


def test_pairing_an_approved_stranger_is_served(agent: AgentRig) -> None:
    _stranger_says(agent, "hi")
    code = re.search(r"approve ([A-Z2-9]{6})", agent.replies()[0])
    assert code is not None
    assert RedisAccessStore(agent.runtime).approve(code.group(1)) is not None
    agent.model.script(Reply.answer("hello Eve"))
    _stranger_says(agent, "hi again")
    assert agent.replies()[-1] == "hello Eve"
    assert len(agent.model.requests) == 1
