"""`POST /api/events` publishes one event or a batch, all-or-nothing at validation."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi.testclient import TestClient

from harness.errors import ConfigurationError
from harness.events import MESSAGE_RECEIVED
from harness.runtime import Context, Runtime, event, function, run_id_for
from harness.runtime.functions import FunctionRegistry
from harness.settings import Settings
from harness.web import create_app
from harness.web.body import MAX_BODY_BYTES
from harness.web.events_api import MAX_BATCH


def _register_paid_handler(runtime: Runtime, registry: FunctionRegistry) -> None:
    @function(id="on-paid", trigger=event("app/paid"), registry=registry)
    def on_paid(ctx: Context) -> None:
        return None

    runtime.register_functions()


def test_one_event_is_published_and_starts_a_run(
    client: TestClient, auth: dict[str, str], runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function triggered by app/paid
    _register_paid_handler(runtime, registry)
    # When one event is posted
    response = client.post(
        "/api/events", json={"name": "app/paid", "id": "inv-1", "data": {"n": 1}}, headers=auth
    )
    # Then it is accepted and one run exists for that function and event
    assert response.status_code == 202, response.text
    run_id = run_id_for("on-paid", "inv-1")
    assert response.json() == {"events": [{"id": "inv-1", "duplicate": False, "runs": [run_id]}]}
    run = runtime.ledger.run(run_id)
    assert run is not None and run.function_id == "on-paid", f"expected a run, got {run}"
    assert runtime.redis.xlen(runtime.keys.events) == 1


def test_an_event_without_id_gets_one(client: TestClient, auth: dict[str, str]) -> None:
    response = client.post("/api/events", json={"name": "app/ping"}, headers=auth)
    assert response.status_code == 202
    (published,) = response.json()["events"]
    assert published["id"] and published["runs"] == []


def test_a_batch_is_published_in_order(
    client: TestClient, auth: dict[str, str], runtime: Runtime, registry: FunctionRegistry
) -> None:
    _register_paid_handler(runtime, registry)
    batch = [{"name": "app/paid", "id": f"inv-{i}"} for i in range(3)] + [{"name": "app/other"}]
    response = client.post("/api/events", json=batch, headers=auth)
    assert response.status_code == 202, response.text
    events = response.json()["events"]
    assert [e["id"] for e in events[:3]] == ["inv-0", "inv-1", "inv-2"]
    assert [len(e["runs"]) for e in events] == [1, 1, 1, 0]
    assert runtime.redis.xlen(runtime.keys.events) == 4


def test_a_repeated_event_id_is_reported_as_duplicate(
    client: TestClient, auth: dict[str, str], runtime: Runtime, registry: FunctionRegistry
) -> None:
    _register_paid_handler(runtime, registry)
    client.post("/api/events", json={"name": "app/paid", "id": "inv-9"}, headers=auth)
    response = client.post("/api/events", json={"name": "app/paid", "id": "inv-9"}, headers=auth)
    assert response.status_code == 202
    assert response.json() == {"events": [{"id": "inv-9", "duplicate": True, "runs": []}]}
    assert runtime.redis.xlen(runtime.keys.events) == 1


def test_a_batch_with_an_invalid_event_publishes_nothing(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    # Given a batch whose second event has a malformed name
    batch = [{"name": "app/ok", "id": "a"}, {"name": "bad name!", "id": "b"}]
    # When it is posted
    response = client.post("/api/events", json=batch, headers=auth)
    # Then the whole batch is refused, naming the culprit, and the stream stays empty
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail.startswith("event [1]: invalid event: name:"), detail
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_a_builtin_event_with_bad_data_is_refused(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    response = client.post(
        "/api/events", json={"name": MESSAGE_RECEIVED, "data": {"message": "hi"}}, headers=auth
    )
    assert response.status_code == 422
    assert "invalid data for event 'agent.message.received'" in response.json()["detail"]
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_a_body_that_is_neither_event_nor_batch_is_refused(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    too_many = [{"name": "app/x"}] * (MAX_BATCH + 1)
    for body in ([], too_many, "app/x", 3):
        response = client.post("/api/events", json=body, headers=auth)
        assert response.status_code == 422, f"expected 422 for {str(body)[:40]}"
        assert "array of 1 to 100 events" in response.json()["detail"]
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_malformed_json_is_a_bad_request(client: TestClient, auth: dict[str, str]) -> None:
    for body in (b'{"name": ', b"\xff\xfe", b'{"name": "a", "data": {"x": NaN}}'):
        response = client.post(
            "/api/events", content=body, headers={**auth, "Content-Type": "application/json"}
        )
        assert response.status_code == 400, f"expected 400 for {body!r}"
        assert response.json()["detail"].startswith("malformed JSON body")


def test_a_body_declared_too_large_is_refused(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    body = b" " * (MAX_BODY_BYTES + 1)
    response = client.post("/api/events", content=body, headers=auth)
    assert response.status_code == 413
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_a_chunked_body_growing_too_large_is_refused(
    client: TestClient, auth: dict[str, str]
) -> None:
    # Given a body without Content-Length, streamed in chunks past the limit
    def chunks() -> Iterator[bytes]:
        yield b'{"name": "app/x", "data": {"pad": "'
        for _ in range(MAX_BODY_BYTES // 65536 + 1):
            yield b"x" * 65536
        yield b'"}}'

    response = client.post("/api/events", content=chunks(), headers=auth)
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 413


def test_publishing_while_redis_is_down_is_a_503_without_details(
    unreachable_runtime: Runtime, settings: Settings, auth: dict[str, str]
) -> None:
    with TestClient(create_app(lambda: unreachable_runtime, settings)) as client:
        response = client.post("/api/events", json={"name": "app/x"}, headers=auth)
    assert response.status_code == 503
    assert response.json() == {"detail": "event bus unavailable; retry later"}
    assert response.headers["Retry-After"] == "5", "a 503 must say when to retry"


def test_publishing_without_a_configured_redis_is_a_503(
    settings: Settings, auth: dict[str, str]
) -> None:
    def no_redis() -> Runtime:
        raise ConfigurationError("REDIS_URL is not set")

    with TestClient(create_app(no_redis, settings)) as client:
        response = client.post("/api/events", json={"name": "app/x"}, headers=auth)
    assert response.status_code == 503
    assert response.json() == {"detail": "event bus unavailable; retry later"}
    assert response.headers["Retry-After"] == "5", "a 503 must say when to retry"
