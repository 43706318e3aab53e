"""A sample of the fuzzed requests sent to the real `harness web` process over a raw socket,
so uvicorn's layer is in the path: its HTTP parser (header bytes the in-process client never
lets through), the header and body read timeouts, the size limits. Whatever arrives, the
answer is never a 5xx, and an unverified request publishes nothing. The in-process fuzzing,
with more examples, is `test_fuzz_web.py`."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.fleet.embedded_redis import free_port
from harness.runtime.keys import Keys
from tests.channels.conftest import SLACK_SIGNING_SECRET, TELEGRAM_SECRET
from tests.chaos.scale import current
from tests.chaos.test_fuzz_web import (
    API_KEY,
    FRESH_TIMESTAMP,
    FUZZ,
    HEADER_TEXT,
    JSON,
    NEAR_SECRET,
    NEAR_SIGNATURE,
    deep_json,
    mistyped_update,
)
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.integration.conftest import Fleet
from tests.waiting import wait_until

SAMPLE = settings(FUZZ, max_examples=max(20, current().fuzz_examples // 3))
"""A third of the in-process examples: each costs a real request to a real process."""
TIMEOUT_S = 1.0
"""The process's WEB_HEADER_TIMEOUT and WEB_BODY_TIMEOUT, short so the timeouts are cheap."""
SECRET_HEADER = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET.encode()}


@dataclass
class WebProcess:
    """`harness web` on the session's Redis, its port and its events stream's key."""

    port: int
    events: str
    redis: redis.Redis

    def published(self) -> int:
        """How many events the web has published so far."""
        return int(self.redis.xlen(self.events))

    def exchange(self, raw: bytes) -> int:
        """Send `raw` bytes, read until the server closes, and return the answer's status; 0
        when it closed without answering. A request left unfinished waits for the server's
        read timeout."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=15) as sock:
            sock.sendall(raw)
            answer = b""
            try:
                while chunk := sock.recv(65536):
                    answer += chunk
            except ConnectionResetError:
                pass
        status_line = answer.split(b"\r\n", 1)[0].split(b" ")
        return int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else 0


@pytest.fixture(scope="module")
def web_process(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebProcess]:
    """The real web process with both channels (against their fakes) and the API key."""
    tmp = tmp_path_factory.mktemp("fuzz-web-process")
    (tmp / "workspace").mkdir()
    port = free_port()
    with FakeTelegramApi() as telegram, FakeSlackApi() as slack:
        fleet = Fleet(
            redis_url=redis_url, prefix=f"fzp{uuid.uuid4().hex[:8]}", log_dir=tmp,
            extra_env={
                "HARNESS_API_KEY": API_KEY, "DM_POLICY": "open",
                "WEB_HEADER_TIMEOUT": str(TIMEOUT_S), "WEB_BODY_TIMEOUT": str(TIMEOUT_S),
                "TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
                "TELEGRAM_API_BASE_URL": telegram.base_url, "TELEGRAM_MODE": "webhook",
                "TELEGRAM_ALLOWED_CHATS": "", "SLACK_BOT_TOKEN": slack.token,
                "SLACK_SIGNING_SECRET": SLACK_SIGNING_SECRET, "SLACK_API_BASE_URL": slack.base_url,
                "SLACK_ALLOWED_CHANNELS": "",
            },
        )  # fmt: skip
        fleet.start("web", "web", "--port", str(port), "--host", "127.0.0.1")
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        try:
            wait_until(
                lambda: _healthy(port), what="the web process to answer /healthz", timeout=60
            )
            yield WebProcess(port, Keys(fleet.prefix).events, client)
            assert fleet.procs["web"].poll() is None, "the web process died:\n" + fleet.logs()
        finally:
            fleet.stop()
            client.close()


def _healthy(port: int) -> bool:
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx2.HTTPError:
        return False


def _request(path: str, headers: dict[str, bytes], body: bytes) -> bytes:
    """An HTTP/1.1 POST with the header values as they are (no encoding, no checks)."""
    lines = [f"POST {path} HTTP/1.1".encode(), b"Host: 127.0.0.1", b"Connection: close"]
    lines += [name.encode() + b": " + value for name, value in headers.items()]
    lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


# -- fuzzed, through uvicorn ----------------------------------------------------------------


@SAMPLE
@given(
    path=st.sampled_from(
        ["/webhooks/telegram", "/webhooks/slack", "/webhooks/slack/interactions", "/api/events",
         "/api/chat"]
    ),
    body=st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()) | deep_json(),
    secret=HEADER_TEXT | NEAR_SECRET,
    signature=HEADER_TEXT | NEAR_SIGNATURE,
    timestamp=HEADER_TEXT | FRESH_TIMESTAMP,
    bearer=HEADER_TEXT,
)  # fmt: skip
def test_unverified_requests_to_the_web_process_get_a_4xx_and_publish_nothing(
    web_process: WebProcess,
    path: str,
    body: bytes,
    secret: bytes,
    signature: bytes,
    timestamp: bytes,
    bearer: bytes,
) -> None:
    before = web_process.published()
    headers = {
        "X-Telegram-Bot-Api-Secret-Token": secret,
        "X-Slack-Signature": signature,
        "X-Slack-Request-Timestamp": timestamp,
        "Authorization": b"Bearer " + bearer,
        "Content-Type": b"application/json",
    }
    status = web_process.exchange(_request(path, headers, body))
    assert 400 <= status < 500, f"answered {status or 'nothing'}"
    assert web_process.published() == before, "an unverified request published an event"


@SAMPLE
@given(body=mistyped_update().map(lambda u: json.dumps(u).encode()) | deep_json())
def test_verified_telegram_bodies_sent_to_the_web_process_never_get_a_5xx(
    web_process: WebProcess, body: bytes
) -> None:
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET.encode()}
    status = web_process.exchange(_request("/webhooks/telegram", headers, body))
    assert 0 < status < 500, f"answered {status or 'nothing'}"


# -- uvicorn's limits and timeouts ----------------------------------------------------------


def _update() -> bytes:
    update: dict[str, Any] = {
        "update_id": 9,
        "message": {
            "message_id": 1, "date": 1, "text": "hi",
            "chat": {"id": 5, "type": "private"}, "from": {"id": 5, "is_bot": False},
        },
    }  # fmt: skip
    return json.dumps(update).encode()


@pytest.mark.parametrize(
    ("case", "raw", "expected"),
    [
        ("malformed request line", b"POST /webhooks/telegram HTTP/9\r\n\r\n", {400}),
        ("header bytes the parser refuses",
         _request("/webhooks/telegram", {"X-A\x00": b"1"}, b""), {400}),
        ("headers of 200 KB", _request("/webhooks/telegram", {"X-Big": b"a" * 200_000}, b""),
         {400, 431}),
        ("a body declared at 50 MB", _request("/webhooks/telegram", SECRET_HEADER, b"")
         .replace(b"Content-Length: 0", b"Content-Length: 50000000"), {413}),
        ("headers never finished", b"POST /webhooks/telegram HTTP/1.1\r\nHost: x\r\nX-Slow:",
         {408}),
        ("a body never finished", _request("/webhooks/telegram", SECRET_HEADER, _update())[:-20],
         {408}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_the_web_process_refuses_what_uvicorn_reads_with_a_4xx(
    web_process: WebProcess, case: str, raw: bytes, expected: set[int]
) -> None:
    # Given a request that breaks HTTP, a limit, or never arrives whole
    before = web_process.published()
    # When it is sent (and the rest never is)
    status = web_process.exchange(raw)
    # Then the answer is the 4xx for it (for the slow ones, once the read timeout passed),
    # and nothing was published
    assert status in expected, f"{case}: answered {status or 'nothing'}, not {expected}"
    assert web_process.published() == before, f"{case}: published an event"


def test_a_whole_update_sent_the_same_way_is_published(web_process: WebProcess) -> None:
    # The raw client above is a fair one: a well-formed request through it is accepted
    before = web_process.published()
    status = web_process.exchange(_request("/webhooks/telegram", SECRET_HEADER, _update()))
    assert status == 200
    assert web_process.published() == before + 1
