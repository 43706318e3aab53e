"""The text the model gateway's calls stream, towards each run's progress channel and draft.

Each call's `LiveText` is deferred: a streamed piece is only kept, and `pass_on`, once per
gateway tick, shows what every call streamed since the last tick in its draft and publishes
the `writing` messages due in one round trip. So a token costs an append on the loop that
makes every call of the process, not a draft update, a wake of its writer and a publish.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from harness.agent import progress
from harness.agent.drafting import open_live
from harness.agent.live_text import LiveText
from harness.agent.model_calls import DraftTarget
from harness.llm.provider import TextSink
from harness.runtime.instance import Runtime


class StreamedTexts:
    """The live texts of one gateway's calls in flight. Used from the gateway's loop only."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._live: dict[LiveText, str] = {}  # each call's text: its session key ("" none)

    @contextlib.asynccontextmanager
    async def streaming(
        self, run_id: str, target: DraftTarget | None
    ) -> AsyncIterator[TextSink | None]:
        """The `on_text` of run `run_id`'s call while in the block (None when `target` is:
        the call does not stream). Leaving it passes on the rest of the text and closes the
        draft, on a thread of the loop's executor (closing waits for a platform call in
        flight, which must not stall every other call): the resumed run opens the same
        draft and goes on with it."""
        if target is None:
            yield None
            return
        live, draft = open_live(
            self._runtime, run_id, target.reply, target.stream_default, deferred=True
        )
        self._live[live] = target.reply.session_key or ""
        try:
            yield live.begin(target.think, target.attempt)
        finally:
            del self._live[live]
            live.end()
            if draft is not None:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(draft.close)

    def pass_on(self) -> None:
        """Show the text each call streamed since the last time, and publish the messages
        due in one round trip. Never raises."""
        due = [
            (key, message)
            for live, key in list(self._live.items())
            if (message := live.flush()) is not None and key
        ]
        if due:
            progress.publish_all(self._runtime, due)
