"""Benchmark of streamed replies: time to the first visible text against time to the full reply.

A scripted model writes a ~1,500-character answer slowly (10 characters every 20 ms, about
three seconds, like a real model). Each round delivers one Telegram webhook to the web app,
runs the turn and the delivery in this process on a fakeredis runtime (`drain`), and reads
from the fake Bot API when the first text became visible (the first `sendMessageDraft`
preview, or the draft's `sendMessage`) and when the whole reply was there (the last
`sendMessage` or `editMessageText`). Each round runs three ways: drafts as previews
(`sendMessageDraft`, the default in a private chat), drafts as a message edited in place
(TELEGRAM_DRAFT_PREVIEWS=false, as in a group) and STREAM_REPLIES=false, whose full reply is
the floor: the time the answer takes to be written and sent once. Median over the rounds.

Usage: python -m bench.streaming [--rounds 5] [--pace 0.02]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import fakeredis
from fastapi.testclient import TestClient

from channels import registry as channel_registry
from channels.handlers import FUNCTIONS
from channels.telegram.channel import TelegramChannel
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.runtime import Runtime, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from harness.web.webhooks import router
from tests.agent.conftest import make_settings
from tests.channels.conftest import TELEGRAM_SECRET, telegram_settings
from tests.channels.payloads import tg_private_text
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi

ANSWER = "The tide turns twice a day, pulled by the moon and pushed by the sun. " * 22


class TimedTelegram(FakeTelegramApi):
    """The fake Bot API, noting when each message was sent or edited (perf_counter)."""

    def __init__(self) -> None:
        super().__init__()
        self._times = threading.Lock()
        self.sent_at: list[float] = []
        self.edited_at: list[float] = []
        self.previewed_at: list[float] = []

    def _m_sendMessageDraft(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        result = super()._m_sendMessageDraft(params)
        with self._times:
            self.previewed_at.append(time.perf_counter())
        return result

    def _m_sendMessage(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        result = super()._m_sendMessage(params)
        with self._times:
            self.sent_at.append(time.perf_counter())
        return result

    def _m_editMessageText(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        result = super()._m_editMessageText(params)
        with self._times:
            self.edited_at.append(time.perf_counter())
        return result


MODES = {"previews": (True, True), "edits": (True, False), "off": (False, False)}
"""Mode name -> (STREAM_REPLIES, TELEGRAM_DRAFT_PREVIEWS)."""


def one_turn(mode: str, pace: float, workspace: Path) -> tuple[float, float, int]:
    """(seconds to first visible text, seconds to the full reply, draft writes) for one turn."""
    stream, previews = MODES[mode]
    with ModelServer() as model, TimedTelegram() as telegram:
        registry = FunctionRegistry()
        runtime = Runtime(
            redis=fakeredis.FakeRedis(decode_responses=True),
            kicker=RecordingKicker(),
            registry=registry,
        )
        for fn in (handle_message, *FUNCTIONS):
            registry.register(fn)
        runtime.register_functions()
        set_runtime(runtime)
        settings = make_settings(workspace, model, dm_policy="open", stream_replies=stream)
        set_agent_deps(build_deps(settings))
        channel = TelegramChannel(telegram_settings(telegram, telegram_draft_previews=previews))
        channel_registry.reset()
        channel_registry.register("telegram", lambda: channel)
        model.script(Reply.answer(ANSWER, chunk=10, pace=pace))
        web = Settings(_env_file=None, agent_workspace=workspace)  # type: ignore[call-arg]
        with TestClient(create_app(lambda: runtime, web, routers=[router])) as client:
            start = time.perf_counter()
            response = client.post(
                "/webhooks/telegram",
                json=tg_private_text(text="Why tides?"),
                headers={"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET},
            )
            response.raise_for_status()
            drain(runtime)
        channel.api.close()
        first = min([*telegram.previewed_at, *telegram.sent_at]) - start
        full = max([*telegram.sent_at, *telegram.edited_at]) - start
        return first, full, len(telegram.edited_at) + len(telegram.previewed_at)


def main() -> None:
    """Run the rounds and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pace", type=float, default=0.02)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float, int]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for mode in MODES:
                workspace = Path(tmp) / f"ws-{i}-{mode}"
                results[mode].append(one_turn(mode, args.pace, workspace))
    set_agent_deps(None)
    set_runtime(None)
    channel_registry.reset()
    print(f"answer: {len(ANSWER)} characters, 10 per delta every {args.pace * 1000:g} ms")
    floor = statistics.median(r[1] for r in results["off"])
    print(
        "| drafts | first visible text, s | full reply, s | first / floor | full / floor "
        "| draft writes |"
    )
    print("|---|---|---|---|---|---|")
    for mode, rows in results.items():
        first = statistics.median(r[0] for r in rows)
        full = statistics.median(r[1] for r in rows)
        writes = statistics.median(r[2] for r in rows)
        print(
            f"| {mode} | {first:.2f} | {full:.2f} | {first / floor:.2f} | {full / floor:.2f} "
            f"| {writes:g} |"
        )
    print(f"floor (STREAM_REPLIES=false, the full reply): {floor:.2f} s")


if __name__ == "__main__":
    main()
