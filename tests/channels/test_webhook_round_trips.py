"""A Telegram webhook costs the web process one Redis round trip, made on the event loop: the
publish script records the event, creates its runs and queues their kicks (bench.burst's
floor is made of it). Counted on a real Redis, with the kicks pushed by the script as in the
fleet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from fastapi.testclient import TestClient

from channels import registry as channel_registry
from channels.telegram.channel import TelegramChannel
from harness.composition import extend_runtime
from harness.events import MESSAGE_RECEIVED
from harness.runtime import Context, Runtime, event, function
from harness.runtime.celery_app import CeleryKicker
from harness.runtime.functions import FunctionRegistry
from harness.settings import Settings
from harness.web import create_app
from harness.web.webhooks import router
from tests.channels import payloads
from tests.channels.channel_doubles import use_channels
from tests.channels.test_webhooks_route import TELEGRAM_HEADERS


class CountingRedis(redis.Redis):
    """A real client that records the commands it sends (a script call is one)."""

    sent: list[str]

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(str(args[0]))
        return super().execute_command(*args, **options)


class CountingAsyncRedis(redis.asyncio.Redis):
    """The asyncio twin of `CountingRedis`."""

    sent: list[str]

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(str(args[0]))
        return await super().execute_command(*args, **options)


@pytest.fixture
def counted(
    redis_url: str, registry: FunctionRegistry
) -> Iterator[tuple[Runtime, CountingRedis, CountingAsyncRedis]]:
    sync = CountingRedis.from_url(redis_url, decode_responses=True)
    aio = CountingAsyncRedis.from_url(redis_url, decode_responses=True)
    sync.sent, aio.sent = [], []
    sync.flushdb()
    runtime = Runtime(
        redis=sync, aredis=aio, kicker=CeleryKicker(in_script=True), registry=registry
    )
    yield extend_runtime(runtime), sync, aio
    sync.flushdb()
    sync.close()


def test_a_telegram_webhook_is_one_redis_round_trip_on_the_event_loop(
    counted: tuple[Runtime, CountingRedis, CountingAsyncRedis],
    registry: FunctionRegistry,
    telegram: TelegramChannel,
    tmp_path: Path,
) -> None:
    # Given the web app, and a function that every message starts, registered
    runtime, sync, aio = counted

    @function(id="answer", trigger=event(MESSAGE_RECEIVED), registry=registry)
    def answer(ctx: Context) -> None:
        return None

    runtime.register_functions()
    use_channels(telegram=telegram)
    settings = Settings(_env_file=None, agent_workspace=tmp_path)  # type: ignore[call-arg]
    try:
        with TestClient(create_app(lambda: runtime, settings, routers=[router])) as client:
            first = client.post(
                "/webhooks/telegram", json=payloads.tg_private_text(update_id=1),
                headers=TELEGRAM_HEADERS,
            )  # fmt: skip
            assert first.status_code == 200, first.text  # the publisher learns the table here
            sync.sent.clear()
            aio.sent.clear()

            # When a second message arrives
            second = client.post(
                "/webhooks/telegram", json=payloads.tg_private_text(update_id=2, text="again"),
                headers=TELEGRAM_HEADERS,
            )  # fmt: skip
            sent = list(aio.sent)
            assert client.portal is not None
            client.portal.call(aio.aclose)  # its connections belong to the client's loop
    finally:
        channel_registry.reset()

    # Then it was accepted with one command on the async client and none on the blocking one
    assert second.status_code == 200, second.text
    assert second.json()["duplicate"] is False
    assert sent == ["EVALSHA"], sent
    assert sync.sent == [], sync.sent
    # and that one command recorded the event, created the run and queued its kick
    assert sync.xlen(runtime.keys.events) == 2
    assert sync.llen("harness") == 2
