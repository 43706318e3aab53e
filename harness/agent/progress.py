"""Live progress of a chat session's run: "thinking", "running bash", on Redis pub/sub.

Progress is a courtesy to whoever watches a session (the terminal chat, `POST /api/chat`), not
part of the run's durable record: it is published fire-and-forget on a pub/sub channel named
from the key prefix and the session key, lost when nobody listens, and never allowed to
break a run. A message carries a state, a detail (a tool's name) and, for a tool, its status
line (`harness.agent.tool_status`: "reading notes/plan.md"), whose argument is short and
redacted; never a tool's full arguments or output.
A `writing` message also carries the answer text a think step has streamed so far (see
`harness.agent.live_text`): the same text the person will read in the reply.

    report(runtime, "chat-1", run_id, RUNNING, "bash")
    with subscribe(runtime, "chat-1") as progress:
        update = progress.get(timeout=1.0)      # Progress | None
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.runtime import Context, Runtime
from harness.runtime.broadcast import Subscription

log = logging.getLogger(__name__)

THINKING = "thinking"
RUNNING = "running"
WRITING = "writing"
MAX_DETAIL_CHARS = 120


class Progress(BaseModel):
    """One progress message. `state` is `thinking`, `running` (then `detail` is the tool's
    name and `status` what it does, "running bash: pytest -q") or `writing` (then `text` is
    everything think step `step` of the run has streamed so far in its attempt `attempt`; a
    new step or attempt starts a new text). Readers must
    accept states they do not know."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    state: str
    detail: str = Field(default="", max_length=MAX_DETAIL_CHARS)
    status: str = Field(default="", max_length=MAX_DETAIL_CHARS)
    text: str = ""
    step: int = 0
    attempt: int = 0

    @property
    def label(self) -> str:
        """What a status line shows: `thinking`, `running bash: pytest -q`, `reading
        notes/plan.md` (`running bash` from a sender that gives no status)."""
        if self.status:
            return self.status
        return f"{self.state} {self.detail}" if self.detail else self.state


def channel_name(runtime: Runtime, session_key: str) -> str:
    """The pub/sub channel of one session's progress, under the runtime's key prefix."""
    return runtime.keys.progress(session_key)


def report(
    runtime: Runtime,
    session_key: str,
    run_id: str,
    state: str,
    detail: str = "",
    status: str = "",
) -> None:
    """Publish one progress message for the session. Best effort: must not raise; a failure
    is logged (without the Redis error's text, which may name hosts) and the run goes on."""
    try:
        message = Progress(
            run_id=run_id,
            state=state,
            detail=detail[:MAX_DETAIL_CHARS],
            status=status[:MAX_DETAIL_CHARS],
        )
    except ValidationError:
        return
    publish(runtime, session_key, message)


def publish(runtime: Runtime, session_key: str, message: Progress) -> None:
    """Publish a ready-made progress message for the session. Must not raise, like `report`."""
    try:
        runtime.broadcast.publish(channel_name(runtime, session_key), message.model_dump_json())
    except Exception as exc:
        log.warning("progress of run %s not published: %s", message.run_id, type(exc).__name__)


def publish_all(runtime: Runtime, messages: Sequence[tuple[str, Progress]]) -> None:
    """`publish` each (session key, message) in one round trip (the model gateway's tick).
    Must not raise."""
    try:
        runtime.broadcast.publish_all(
            [(channel_name(runtime, key), message.model_dump_json()) for key, message in messages]
        )
    except Exception as exc:
        log.warning("progress of %d runs not published: %s", len(messages), type(exc).__name__)


def report_step(
    ctx: Context, session_key: str | None, state: str, detail: str = "", status: str = ""
) -> None:
    """`report` from inside a step function of a run; does nothing without a session.

    Call it inside the function given to `step.run`, not before it: a replay returns the
    memoized result without calling the function, so a recorded step is not reported again.
    Must not raise.
    """
    if not session_key:
        return
    try:
        runtime = ctx.runtime
    except AttributeError:
        log.warning("progress of run %s not published: no runtime on the context", ctx.run_id)
        return
    report(runtime, session_key, ctx.run_id, state, detail, status)


class ProgressSubscription:
    """Progress messages of one session published after `subscribe` returned.

    A context manager holding one Redis connection until closed. Best effort like `report`:
    a Redis failure is logged, `broken` becomes True and the subscription then yields
    nothing (`get` returns None at once). Not thread-safe: one reader.
    """

    def __init__(self, runtime: Runtime, session_key: str) -> None:
        self.channel = channel_name(runtime, session_key)
        self.broken = False
        self._closed = False
        self._subscription: Subscription | None = None
        try:
            self._subscription = runtime.broadcast.subscribe(self.channel)
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        log.warning("progress subscription to %s failed: %s", self.channel, type(exc).__name__)
        self.broken = True
        self.close()

    def get(self, timeout: float) -> Progress | None:
        """The next progress message, waiting up to `timeout` seconds; None when none came,
        and at once when the subscription is broken or closed. Malformed messages are skipped."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while not (self.broken or self._closed) and self._subscription is not None:
            left = deadline - time.monotonic()
            try:
                data = self._subscription.get_message(max(left, 0.0))
            except Exception as exc:
                self._fail(exc)
                return None
            if data is None:
                return None
            parsed = parse_progress(data)
            if parsed is not None:
                return parsed
        return None

    def messages(self, timeout: float = 0.0) -> Iterator[Progress]:
        """Yield messages until none arrives within `timeout` seconds (0: only those that
        are already here)."""
        while (message := self.get(timeout)) is not None:
            yield message

    def close(self) -> None:
        """Unsubscribe and release the connection. Idempotent; must not raise."""
        self._closed = True
        if self._subscription is not None:
            self._subscription.close()

    def __enter__(self) -> ProgressSubscription:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def subscribe(runtime: Runtime, session_key: str) -> ProgressSubscription:
    """Start listening to a session's progress; use as a context manager. Must not raise."""
    return ProgressSubscription(runtime, session_key)


def parse_progress(data: Any) -> Progress | None:
    """A progress message from a pub/sub payload; None (logged at debug) when malformed."""
    try:
        return Progress.model_validate(json.loads(data))
    except (TypeError, ValueError, ValidationError):
        log.debug("skipped a malformed progress message")
        return None
