"""The wire floor of a turn: the CPU its unavoidable calls cost a client, measured alone.

A served Telegram turn must call the model once and the Bot API three times (typing, the
draft preview, `sendMessage`). `wire_floor` makes those calls from this thread, through the
official Anthropic SDK and httpx2 (the clients the worker uses), against the benchmark's own
fake servers, with the worker's own recorded request body, and returns this thread's CPU
time per call (`time.thread_time`, so the fake servers' threads in the same process are not
counted). Added to the Celery no-ops a turn's kicks cost, it is the least CPU a turn can
take in a worker; `bench.webhooks` sets the workers' CPU per turn against it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anthropic
from anthropic.types import Message

from channels.telegram.api import TelegramApi
from tests.fakes.model_server import ModelServer
from tests.fakes.telegram_api import FakeTelegramApi

CHAT = "42"  # a chat no turn of the benchmark uses
WARM_UP = 3
"""Calls of each kind made before timing: connections, the SDK's lazy imports."""


def wire_floor(model: ModelServer, telegram: FakeTelegramApi, calls: int) -> dict[str, float]:
    """This thread's CPU in ms per call, the mean of `calls` calls after `WARM_UP` more,
    for "model" (the last Messages request a worker sent, streamed and read to its end),
    "typing", "preview" and "send". Every call is a real request the fakes answer and record:
    call it once the turns being counted are all answered. The model server must be able to
    answer `calls + WARM_UP` more requests. Raises `LookupError` when no worker has called
    the model yet."""
    recorded = [r for r in model.requests if r.api == "anthropic"]
    if not recorded:
        raise LookupError("no Messages request recorded yet: run some turns first")
    body = recorded[-1].raw
    sdk = anthropic.Anthropic(api_key=model.api_key, base_url=model.url, max_retries=0)
    api = TelegramApi(telegram.token, telegram.base_url)

    def model_call() -> None:
        stream = sdk.post(
            "/v1/messages",
            cast_to=Message,
            content=body,
            stream=True,
            stream_cls=anthropic.Stream[object],  # events as dicts, as the worker reads them
        )
        for _event in stream:
            pass

    try:
        return {
            "model": _cpu_ms(model_call, calls),
            "typing": _cpu_ms(lambda: api.send_chat_action(CHAT), calls),
            "preview": _cpu_ms(lambda: api.send_message_draft(CHAT, 7, "po"), calls),
            "send": _cpu_ms(lambda: api.send_message(CHAT, "pong"), calls),
        }
    finally:
        sdk.close()
        api.close()


def _cpu_ms(call: Callable[[], object], times: int) -> float:
    for _ in range(WARM_UP):
        call()
    started = time.thread_time()
    for _ in range(times):
        call()
    return 1000 * (time.thread_time() - started) / times
