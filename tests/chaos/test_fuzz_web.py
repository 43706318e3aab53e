"""The web endpoints fuzzed with hypothesis, on a real Redis: whatever arrives, the answer is
never a 5xx, and a request that fails verification (Telegram's secret, Slack's signature, the
API key) publishes nothing. Includes the inputs issue 18 found answered with 500: non-ASCII
signatures, JSON nested hundreds of levels deep, lone surrogates, badly typed payloads with a
valid secret. The example-based tests of each case are in tests/channels/test_webhooks_route.py
and tests/web/; these look for the cases nobody wrote down."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.runtime import Runtime
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from tests.channels import payloads
from tests.channels.conftest import (
    SLACK_SIGNING_SECRET,
    TELEGRAM_SECRET,
)
from tests.chaos.scale import current
from tests.web_fuzzing import JSON, production_app, published

API_KEY = "fuzz-api-key-0123456789abcdef"
FUZZ = settings(
    max_examples=current().fuzz_examples,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def web(redis_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Runtime]]:
    """The whole app (every router) on the session's real Redis, with both channels."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    runtime = Runtime(redis=client, kicker=RecordingKicker(), keys=Keys(f"fz{uuid.uuid4().hex}"))
    with (
        production_app(runtime, tmp_path, API_KEY) as app,
        TestClient(app, raise_server_exceptions=False) as test_client,
    ):
        yield test_client, runtime


def _no_server_error(response: Any) -> None:
    assert response.status_code < 500, f"{response.status_code}: {response.text[:300]}"


# -- strategies ------------------------------------------------------------------------------

SURROGATE_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(),
    max_size=20,
)


@st.composite
def deep_json(draw: st.DrawFn) -> bytes:
    """An object holding arrays or objects nested 1 to 3,000 levels deep."""
    depth = draw(st.integers(1, 3000))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    inner = opener * depth + "1" + closer * depth
    return b'{"update_id": 5, "deep": ' + inner.encode() + b"}"


@st.composite
def mistyped_update(draw: st.DrawFn) -> dict[str, Any]:
    """A documented Telegram update with one field, at any depth, replaced by any JSON."""
    update: dict[str, Any] = draw(
        st.sampled_from(
            [
                payloads.tg_private_text(),
                payloads.tg_group_mention(),
                payloads.tg_forum_topic(),
                payloads.tg_photo(),
                payloads.tg_callback_query(),
            ]
        )
    )
    node: Any = update
    while True:
        key = draw(st.sampled_from(sorted(node)))
        if isinstance(node[key], dict) and node[key] and draw(st.booleans()):
            node = node[key]
            continue
        node[key] = draw(JSON | SURROGATE_TEXT)
        return update


HEADER_TEXT = st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
FRESH_TIMESTAMP = st.builds(lambda: str(int(time.time())).encode())
# Near the secret but never it (an empty suffix, or a prefix plus the rest, would be the
# secret itself: a verified request, which the 4xx test must not be given).
NEAR_SECRET = (
    HEADER_TEXT.map(lambda b: TELEGRAM_SECRET.encode() + b)
    | HEADER_TEXT.map(lambda b: TELEGRAM_SECRET.encode()[: len(b) % len(TELEGRAM_SECRET)] + b)
).filter(lambda b: b != TELEGRAM_SECRET.encode())
NEAR_SIGNATURE = HEADER_TEXT.map(lambda b: b"v0=" + b) | st.text(max_size=64).map(
    lambda t: ("v0=" + t).encode("utf-8")
)


def _slack_signature(body: bytes, timestamp: str) -> str:
    base = f"v0:{timestamp}:".encode() + body
    return "v0=" + hmac.new(SLACK_SIGNING_SECRET.encode(), base, hashlib.sha256).hexdigest()


# -- unverified requests publish nothing ----------------------------------------------------


@FUZZ
@given(
    path=st.sampled_from(
        ["/webhooks/telegram", "/webhooks/slack", "/webhooks/slack/interactions", "/api/events",
         "/api/chat", "/webhooks/nope"]
    ),
    body=st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()) | deep_json(),
    secret=HEADER_TEXT | NEAR_SECRET,
    signature=HEADER_TEXT | NEAR_SIGNATURE,
    timestamp=HEADER_TEXT | FRESH_TIMESTAMP,
    bearer=HEADER_TEXT,
)  # fmt: skip
def test_unverified_requests_get_a_4xx_and_publish_nothing(
    web: tuple[TestClient, Runtime],
    path: str,
    body: bytes,
    secret: bytes,
    signature: bytes,
    timestamp: bytes,
    bearer: bytes,
) -> None:
    client, runtime = web
    before = published(runtime)
    headers = {
        "X-Telegram-Bot-Api-Secret-Token": secret,
        "X-Slack-Signature": signature,
        "X-Slack-Request-Timestamp": timestamp,
        "Authorization": b"Bearer " + bearer,
        "Content-Type": b"application/json",
    }
    response = client.post(path, content=body, headers=headers)  # type: ignore[arg-type]
    assert 400 <= response.status_code < 500, f"{response.status_code}: {response.text[:300]}"
    assert published(runtime) == before, "an unverified request published an event"


# -- verified requests never get a 5xx -----------------------------------------------------


@FUZZ
@given(update=mistyped_update() | JSON)
def test_verified_telegram_updates_of_any_shape_never_get_a_5xx(
    web: tuple[TestClient, Runtime], update: Any
) -> None:
    client, _runtime = web
    headers = {
        "X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET,
        "Content-Type": "application/json",
    }
    # Escaped (`\ud800`), the only way a lone surrogate can arrive in JSON: the client's own
    # encoder writes UTF-8 and refuses to encode one at all.
    body = json.dumps(update).encode()
    _no_server_error(client.post("/webhooks/telegram", content=body, headers=headers))


@FUZZ
@given(body=deep_json() | st.binary(max_size=200))
def test_verified_telegram_bodies_deep_or_broken_never_get_a_5xx(
    web: tuple[TestClient, Runtime], body: bytes
) -> None:
    client, runtime = web
    before = published(runtime)
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    response = client.post("/webhooks/telegram", content=body, headers=headers)
    _no_server_error(response)
    assert published(runtime) == before, "a body that is not an update was published"


@FUZZ
@given(text=SURROGATE_TEXT, event=JSON)
def test_signed_slack_events_with_surrogates_or_any_shape_never_get_a_5xx(
    web: tuple[TestClient, Runtime], text: str, event: Any
) -> None:
    client, _runtime = web
    payload = payloads.slack_dm()
    payload["event"]["text"] = text
    for candidate in (payload, {**payload, "event": event}):
        body = json.dumps(candidate).encode()
        timestamp = str(int(time.time()))
        headers = {
            "X-Slack-Signature": _slack_signature(body, timestamp),
            "X-Slack-Request-Timestamp": timestamp,
            "Content-Type": "application/json",
        }
        _no_server_error(client.post("/webhooks/slack", content=body, headers=headers))


@FUZZ
@given(body=JSON.map(lambda v: json.dumps(v).encode()) | deep_json() | st.binary(max_size=200))
def test_authorised_event_api_requests_of_any_shape_never_get_a_5xx(
    web: tuple[TestClient, Runtime], body: bytes
) -> None:
    client, _runtime = web
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    _no_server_error(client.post("/api/events", content=body, headers=headers))


@FUZZ
@given(
    name=SURROGATE_TEXT,
    data=st.dictionaries(SURROGATE_TEXT, JSON | SURROGATE_TEXT, max_size=3),
)
def test_authorised_events_with_surrogates_never_get_a_5xx(
    web: tuple[TestClient, Runtime], name: str, data: dict[str, Any]
) -> None:
    client, _runtime = web
    body = json.dumps({"name": name or "x", "data": data}).encode()
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    _no_server_error(client.post("/api/events", content=body, headers=headers))
