"""Where a chat turn's live text goes: the session's progress channel and the platform draft.

`live_turn` builds the turn's `LiveText` from the settings and the reply target, opens the
platform draft through `harness.agent.platforms` (the agent does not know the channels), and
ends it when the turn's code is left, however it is left:

- normally, parked (`Suspended`: a retry backoff, a wait) or taken over by another worker
  (`LeaseLost`): the draft stays as it is; the
  reply (`send-reply` finishes it in place) or the resumed run (it finds the same draft in the
  run's `DraftLog`) takes over;
- stopped (cancelled) or failed: the draft is marked as interrupted, so no half answer is
  left looking like a whole one. A steering message does not stop the turn: it is taken
  before the next model call, or, when the answer being drawn is the last, answered after it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

from harness.agent import platforms, progress
from harness.agent.live_text import LiveText
from harness.events import ReplyTarget
from harness.runtime import Context, Runtime
from harness.runtime.steps import Interrupt, LeaseLost, Suspended
from harness.settings import Settings


@contextmanager
def live_turn(
    ctx: Context, settings: Settings, reply: ReplyTarget | None
) -> Iterator[LiveText | None]:
    """The live text of the turn run by `ctx`, or None when STREAM_REPLIES is off. Progress
    goes to the reply's session (if any); a draft is drawn when the reply's channel streams."""
    if not settings.stream_replies or reply is None:
        yield None
        return
    live, writer = open_live(ctx.runtime, ctx.run_id, reply, settings.stream_replies)
    if writer is None:
        yield live
        return
    try:
        yield live
    except (Suspended, LeaseLost):  # the run goes on, here later or on another worker
        writer.close()
        raise
    except (Interrupt, Exception):
        writer.close(interrupted=True)
        raise
    writer.close()


def open_live(
    runtime: Runtime,
    run_id: str,
    reply: ReplyTarget,
    stream_default: bool,
    *,
    deferred: bool = False,
) -> tuple[LiveText, platforms.Draft | None]:
    """Run `run_id`'s live text towards `reply` (`deferred`: see `LiveText`), and the
    platform draft it draws (None when the channel does not stream): what `live_turn` opens,
    and the model gateway too, which finds the same draft (by run) while it streams an
    offloaded call. Close the draft."""
    publish = None
    if reply.session_key:
        publish = functools.partial(progress.publish, runtime, reply.session_key)
    chat = platforms.installed()
    writer = None if chat is None else chat.open_draft(runtime, run_id, reply, stream_default)
    return LiveText(run_id, publish=publish, sink=writer, deferred=deferred), writer
