"""`POST /api/chat` sends a message and streams the run's progress and the reply as SSE.

The runtime answers synchronously: its kicker drains every kicked run before `publish`
returns, so the whole turn (with the scripted model) happens while the message is sent, and
the stream then replays its progress and reply. No threads of our own, no sleeps.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from fastapi.testclient import TestClient

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.errors import ConfigurationError
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import DrainingKicker
from harness.settings import Settings
from harness.web import create_app
from harness.web.body import MAX_BODY_BYTES
from harness.web.chat_api import SESSION_HEADER, chat_router, router
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer, Reply


@pytest.fixture
def runtime(registry: FunctionRegistry) -> Iterator[Runtime]:
    kicker = DrainingKicker()
    client = fakeredis.FakeRedis(decode_responses=True)
    rt = Runtime(redis=client, kicker=kicker, registry=registry)
    kicker.runtime = rt
    yield rt
    client.flushall()


@pytest.fixture
def client(runtime: Runtime, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: runtime, settings, routers=[router])) as test_client:
        yield test_client


@pytest.fixture
def agent(
    runtime: Runtime, registry: FunctionRegistry, model_server: ModelServer, tmp_path: Path
) -> Iterator[ModelServer]:
    """The real agent on the runtime, talking to the scripted model server."""
    registry.register(handle_message)
    runtime.register_functions()
    set_agent_deps(build_deps(make_settings(tmp_path / "workspace", model_server)))
    yield model_server
    set_agent_deps(None)


def _events(client: TestClient, body: Any, headers: dict[str, str]) -> tuple[Any, list[Any]]:
    """POST /api/chat and parse the whole SSE stream into (response, [(event, data)])."""
    with client.stream("POST", "/api/chat", json=body, headers=headers) as response:
        text = "".join(response.iter_text())
    events = []
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if not line.startswith(":")]  # comments
        fields = dict(line.split(": ", 1) for line in lines)
        if fields:
            events.append((fields["event"], json.loads(fields["data"])))
    return response, events


def test_chat_streams_status_events_then_the_reply(
    client: TestClient, auth: dict[str, str], agent: ModelServer
) -> None:
    # Given a model that lists the workspace, then answers
    agent.script(Reply.tool("ls", {"path": "."}), Reply.answer("You have a SOUL.md."))
    # When a client posts a message without a session
    response, events = _events(client, {"message": "what is there?"}, auth)
    # Then the stream shows each step of the run, then the reply, in the generated session
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    session = response.headers[SESSION_HEADER]
    assert session.startswith("api-"), session
    statuses = [e for e in events if e[0] != "delta"]
    assert statuses[:3] == [
        ("status", {"state": "thinking", "detail": "", "label": "thinking"}),
        ("status", {"state": "running", "detail": "ls", "label": "listing the workspace"}),
        ("status", {"state": "thinking", "detail": "", "label": "thinking"}),
    ], events
    kind, reply = events[-1]
    assert kind == "reply" and reply["response"] == "You have a SOUL.md.", events
    assert reply["session"] == session and reply["run_id"].startswith("r")
    assert len(statuses) == 4, f"the reply must end the stream, got {events}"


def test_chat_streams_the_answer_as_delta_events_in_order_before_the_reply(
    client: TestClient, auth: dict[str, str], agent: ModelServer
) -> None:
    # Given a model that streams a long answer a few characters at a time
    answer = "Deltas arrive in order, and together they spell the reply. " * 6
    agent.script(Reply.answer(answer, chunk=5))
    # When a client posts a message
    _, events = _events(client, {"message": "stream it"}, auth)
    # Then delta events, the first starting a new text, append up to the reply, which ends it
    deltas = [data for kind, data in events if kind == "delta"]
    assert len(deltas) >= 1 and deltas[0]["new"] is True, events
    assert not any(d["new"] for d in deltas[1:]), "one think step: one text"
    assert "".join(d["text"] for d in deltas).strip() == answer.strip()
    kind, reply = events[-1]
    assert kind == "reply" and reply["response"] == answer.strip()
    last_delta = max(i for i, (kind, _) in enumerate(events) if kind == "delta")
    assert last_delta < len(events) - 1, "deltas must come before the reply"


def test_chat_continues_a_given_session(
    client: TestClient, auth: dict[str, str], agent: ModelServer
) -> None:
    # Given a first exchange in session "notes"
    agent.script(Reply.answer("Noted."), Reply.answer("You said: remember milk."))
    _events(client, {"message": "remember milk", "session": "notes"}, auth)
    # When a second message is posted to the same session
    response, events = _events(client, {"message": "what did I say?", "session": "notes"}, auth)
    # Then the model saw the whole conversation and the reply belongs to that session
    assert response.headers[SESSION_HEADER] == "notes"
    assert events[-1][0] == "reply" and events[-1][1]["session"] == "notes"
    assert len(agent.requests[1].body["messages"]) == 3, "history must include the first turn"


def test_chat_without_an_answer_ends_with_a_timeout_error(
    runtime: Runtime, settings: Settings, auth: dict[str, str]
) -> None:
    # Given no agent, and a short reply timeout
    app = create_app(lambda: runtime, settings, routers=[chat_router(timeout=0.05)])
    with TestClient(app) as client:
        # When a message is posted
        response, events = _events(client, {"message": "anyone?", "session": "s1"}, auth)
    # Then the stream ends with an error event that says so
    assert response.status_code == 200
    assert events == [
        ("error", {"error": "timeout", "message": "no reply within 0.05s", "session": "s1"})
    ]


def test_chat_streams_share_one_reader_that_stops_with_the_app(
    runtime: Runtime, settings: Settings, auth: dict[str, str], agent: ModelServer
) -> None:
    # Given an app that answered two chats
    agent.script(Reply.answer("One."), Reply.answer("Two."))
    app = create_app(lambda: runtime, settings, routers=[chat_router()])
    with TestClient(app) as client:
        first = _events(client, {"message": "one", "session": "s1"}, auth)[1]
        second = _events(client, {"message": "two", "session": "s2"}, auth)[1]
        hub = app.state.chat_hub
        readers = [t for t in threading.enumerate() if t.name.startswith("fanout-")]
        assert hub.cursor is not None, "the chats must have gone through the app's hub"
    # When the app shuts down
    # Then each chat got its own reply, and the hub's readers are stopped
    assert first[-1][1]["response"] == "One." and second[-1][1]["response"] == "Two."
    assert hub.cursor is None
    assert not any(t.is_alive() for t in readers), "the hub's readers must stop at shutdown"


def test_chat_needs_the_api_key(client: TestClient, runtime: Runtime) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = client.post("/api/chat", json={"message": "hi"}, headers=headers)
        assert response.status_code == 401, f"expected 401 with {headers}"
    assert runtime.redis.xlen(runtime.keys.events) == 0, "nothing may be published"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "message: Field required"),
        ({"message": ""}, "message: String should have at least 1 character"),
        ({"message": "   "}, "message: Value error, must not be blank"),
        ({"message": "x" * 20_001}, "message: String should have at most 20000 characters"),
        ({"message": 3}, "message: Input should be a valid string"),
        ({"message": "hi", "session": ""}, "session: String should have at least 1 character"),
        ({"message": "hi", "session": " "}, "session: Value error, must not be blank"),
        ({"message": "hi", "session": "s" * 301}, "session: String should have at most 300"),
        ({"message": "hi", "sesion": "typo"}, "sesion: Extra inputs are not permitted"),
        (["hi"], "body: Input should be a valid dictionary"),
    ],
)
def test_chat_refuses_an_invalid_body(
    client: TestClient, auth: dict[str, str], runtime: Runtime, body: Any, problem: str
) -> None:
    response = client.post("/api/chat", json=body, headers=auth)
    assert response.status_code == 422, response.text
    assert problem in response.json()["detail"], response.json()
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_chat_refuses_malformed_json(client: TestClient, auth: dict[str, str]) -> None:
    for raw in (b'{"message": ', b"\xff\xfe"):
        response = client.post(
            "/api/chat", content=raw, headers={**auth, "Content-Type": "application/json"}
        )
        assert response.status_code == 400, f"expected 400 for {raw!r}"
        assert response.json()["detail"].startswith("malformed JSON body")


def test_chat_refuses_a_body_over_the_limit(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    response = client.post("/api/chat", content=b" " * (MAX_BODY_BYTES + 1), headers=auth)
    assert response.status_code == 413
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_chat_without_a_bus_is_a_503(settings: Settings, auth: dict[str, str]) -> None:
    def no_redis() -> Runtime:
        raise ConfigurationError("REDIS_URL is not set")

    with TestClient(create_app(no_redis, settings, routers=[router])) as client:
        response = client.post("/api/chat", json={"message": "hi"}, headers=auth)
    assert response.status_code == 503
    assert response.json() == {"detail": "event bus unavailable; retry later"}
    assert response.headers["Retry-After"] == "5", "a 503 must say when to retry"


def test_chat_with_redis_down_is_a_503_without_details(
    unreachable_runtime: Runtime, settings: Settings, auth: dict[str, str]
) -> None:
    with TestClient(create_app(lambda: unreachable_runtime, settings, routers=[router])) as c:
        response = c.post("/api/chat", json={"message": "hi"}, headers=auth)
    assert response.status_code == 503
    assert response.json() == {"detail": "event bus unavailable; retry later"}
    assert response.headers["Retry-After"] == "5", "a 503 must say when to retry"
