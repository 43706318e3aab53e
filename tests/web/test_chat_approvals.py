"""`/api/chat` and approvals: the stream announces a request as an `approval` event, and
`POST /api/chat/approvals/{id}` answers it.

The runtime answers synchronously (`DrainingKicker`): the turn runs until it waits while the
message is sent, and the answer's publish runs the rest of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from channels.approvals import answer_approval, ask_approval
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.events import REPLY_READY
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.settings import Settings
from harness.web import create_app
from harness.web.chat_api import SESSION_HEADER, chat_router
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer, Reply
from tests.web.test_chat_api import _events, runtime  # noqa: F401

# ruff: noqa: F811  (`runtime` is the answering runtime fixture of test_chat_api)


@pytest.fixture
def fleet(
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    settings: Settings,
    tmp_path: Path,
) -> Iterator[TestClient]:
    """The agent and the approval functions, behind /api/chat with a short reply timeout (the
    stream ends once the request is announced; the answer is checked on the bus)."""
    for fn in (handle_message, ask_approval, answer_approval):
        registry.register(fn)
    runtime.register_functions()
    set_agent_deps(build_deps(make_settings(tmp_path / "workspace", model_server)))
    app = create_app(lambda: runtime, settings, routers=[chat_router(timeout=0.2)])
    with TestClient(app) as client:
        yield client
    set_agent_deps(None)


def _replies(runtime: Runtime) -> list[str]:
    return [
        str(json.loads(fields["event"])["data"]["response"])
        for _id, fields in runtime.redis.xrange(runtime.keys.events)
        if fields["name"] == REPLY_READY
    ]


def test_chat_api_streams_an_approval_event_and_takes_the_answer(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    auth: dict[str, str],
    tmp_path: Path,
) -> None:
    # Given a model that wants to write in functions/
    model_server.script(
        Reply.tool("write", {"path": "functions/a.py", "content": "a = 1\n"}),
        Reply.answer("Written."),
    )
    # When a client sends a message
    response, events = _events(fleet, {"message": "write it"}, auth)
    # Then the stream announces the request, naming the tool and the path
    approvals = [data for name, data in events if name == "approval"]
    assert len(approvals) == 1, events
    assert approvals[0]["tool"] == "write" and "functions/a.py" in approvals[0]["summary"]
    # When the client approves it
    body: dict[str, Any] = {"session": response.headers[SESSION_HEADER], "decision": "approve"}
    url = f"/api/chat/approvals/{approvals[0]['approval_id']}"
    answered = fleet.post(url, json=body, headers=auth)
    # Then it is accepted, the file is written and the turn ends with the model's reply
    assert answered.status_code == 202, answered.text
    assert (tmp_path / "workspace" / "functions" / "a.py").read_text() == "a = 1\n"
    assert _replies(runtime) == ["Written."]


def test_chat_api_refuses_an_answer_that_is_not_a_decision(
    fleet: TestClient, auth: dict[str, str]
) -> None:
    body = {"session": "api-1", "decision": "maybe"}
    answered = fleet.post("/api/chat/approvals/abc", json=body, headers=auth)
    assert answered.status_code == 422, answered.text


def test_chat_api_answer_needs_the_api_key(fleet: TestClient) -> None:
    body = {"session": "api-1", "decision": "approve"}
    assert fleet.post("/api/chat/approvals/abc", json=body).status_code == 401


def test_chat_api_allow_for_session_covers_the_owners_next_call(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    auth: dict[str, str],
    tmp_path: Path,
) -> None:
    # Given the owner allowed writes "for this session" through the API
    write = Reply.tool("write", {"path": "functions/a.py", "content": "a = 1\n"})
    model_server.script(write, Reply.answer("Written."))
    response, events = _events(fleet, {"message": "write it"}, auth)
    session = response.headers[SESSION_HEADER]
    (approval,) = [data for name, data in events if name == "approval"]
    body: dict[str, Any] = {"session": session, "decision": "session"}
    fleet.post(f"/api/chat/approvals/{approval['approval_id']}", json=body, headers=auth)
    # When the model writes in functions/ again in the same session
    again = Reply.tool("write", {"path": "functions/b.py", "content": "b = 1\n"})
    model_server.script(again, Reply.answer("Again."))
    _response, later = _events(fleet, {"message": "again", "session": session}, auth)
    # Then it runs without asking: the grant is the owner's, and the owner asked
    assert [name for name, _data in later if name == "approval"] == []
    assert (tmp_path / "workspace" / "functions" / "b.py").read_text() == "b = 1\n"
