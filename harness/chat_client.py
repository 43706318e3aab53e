"""Talking to the agent from outside the fleet: send a message, follow its run, get the reply.

Shared by the terminal chat (`harness chat`, `harness send --wait`) and `POST /api/chat`, so
there is one way to wait for a reply. A message goes onto the bus as `agent.message.received`
with `destination.chat_id` = the session key; the reply is the first `agent.reply.ready` on
the events stream, after the message, for the same channel and chat id. Progress comes from
the session's pub/sub channel (`harness.agent.progress`) while the reply is awaited.

    chat = ChatSession(runtime)
    with chat.send("hello") as exchange:
        for update in exchange.updates():
            ...  # Progress and ApprovalAsked, then one ChatReply (or ChatError raised)

A session made with `can_answer=True` tells the agent a person is there to approve risky tool
calls: their requests come as `ApprovalAsked`, and `ChatSession.answer` answers them.

The runtime's `BusUnavailableError` becomes `ChatUnavailableError` (a kind of it) here.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from harness.addresses import CAN_ANSWER_META
from harness.agent.progress import Progress
from harness.chat_feed import DirectFeeds, Feed, FeedSource
from harness.errors import BusUnavailableError, HarnessError, InvalidEventError
from harness.events import (
    APPROVAL_GIVEN,
    APPROVAL_REQUESTED,
    FUNCTION_FAILED,
    MESSAGE_RECEIVED,
    REPLY_READY,
    ApprovalRequested,
    Event,
    FunctionFailed,
    ReplyReady,
    Sender,
    validate_event,
)
from harness.llm.errors import failure_reason
from harness.runtime import Runtime, publish

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 300.0
POLL_INTERVAL_S = 0.25
TERMINAL_SENDER = Sender(id="cli", name="terminal")


class ChatError(HarnessError):
    """No reply for a chat message. `code` names the reason for API clients."""

    code = "error"


class ChatTimeoutError(ChatError):
    """No reply arrived within the timeout. The run may still answer later."""

    code = "timeout"


class ChatFailedError(ChatError):
    """The run started by the message failed after its retries; no reply will come.
    `reason` says what a person should fix, when the failure is one we can name (a refused
    model key, a spent quota, an unknown model: `harness.llm.errors.failure_reason`)."""

    code = "failed"

    def __init__(self, message: str, run_id: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.reason = reason

    @classmethod
    def of(cls, run_id: str, reason: str | None) -> ChatFailedError:
        """The error for a failed run, its message ending with `reason` when known."""
        why = f": {reason}" if reason else ""
        return cls(f"the agent's run {run_id} failed; no reply will come{why}", run_id, reason)


class ChatUnavailableError(ChatError, BusUnavailableError):
    """The bus (Redis) could not be reached. The message may or may not have been sent."""

    code = "unavailable"


@dataclass(frozen=True)
class ChatReply:
    """The agent's answer to a message."""

    response: str
    run_id: str
    session_key: str


@dataclass(frozen=True)
class Waiting:
    """Nothing happened for a while (see `Exchange.updates(heartbeat=...)`): a keep-alive."""


@dataclass(frozen=True)
class ApprovalAsked:
    """The agent waits for a yes before running `tool` (`summary`: the command, the change);
    answer with `ChatSession.answer(approval_id, ...)`."""

    approval_id: str
    tool: str
    summary: str
    timeout: str


ChatUpdate = Progress | ChatReply | Waiting | ApprovalAsked


def new_session_key(prefix: str = "cli") -> str:
    """A fresh random session key, `<prefix>-<12 hex digits>`."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def chat_message(
    text: str, session_key: str, *, channel: str, sender: Sender, can_answer: bool = False
) -> Event:
    """The `agent.message.received` event for a message in a session whose replies come back
    to `chat_id` = the session key; `can_answer` says a person can approve tool calls here.
    Raises `InvalidEventError` for data the bus would refuse."""
    data = {
        "message": text,
        "session_key": session_key,
        "channel": channel,
        "sender": sender.model_dump(mode="json"),
        "destination": {"chat_id": session_key},
        "channel_meta": {CAN_ANSWER_META: True} if can_answer else {},
    }
    return validate_event(Event(name=MESSAGE_RECEIVED, data=data))


class Exchange:
    """One message on its way: its progress and then its reply. A context manager that
    releases its feed (`harness.chat_feed`) on exit; `updates` can be iterated once."""

    def __init__(self, chat: ChatSession, event_id: str, feed: Feed) -> None:
        self.event_id = event_id
        self.session_key = chat.session_key
        self._chat = chat
        self._feed = feed

    def updates(self, heartbeat: float | None = None) -> Iterator[ChatUpdate]:
        """Progress messages and approval requests as they come, then the `ChatReply`, then
        stop.

        With `heartbeat`, yields `Waiting()` after that many seconds without an update.
        Raises `ChatTimeoutError` after the session's timeout (counted again from each
        approval request), `ChatFailedError` when the run failed, `ChatUnavailableError` when
        Redis fails (with a hub's feed: when Redis is still down at the deadline). Closes the
        exchange when done.
        """
        chat = self._chat
        deadline = time.monotonic() + chat.timeout
        quiet_since = time.monotonic()
        try:
            while True:
                now = time.monotonic()
                if now >= deadline:
                    if self._feed.down:
                        raise ChatUnavailableError("the event bus is unavailable")
                    raise ChatTimeoutError(f"no reply within {chat.timeout:g}s")
                wait = deadline - now
                if heartbeat is not None:
                    wait = max(0.0, min(wait, quiet_since + heartbeat - now))
                try:
                    item = self._feed.next(wait)
                except BusUnavailableError as exc:
                    raise ChatUnavailableError("the event bus is unavailable") from exc
                found = self._match(item) if isinstance(item, dict) else item
                if isinstance(found, ApprovalAsked):
                    deadline = time.monotonic() + chat.timeout
                if found is not None:
                    quiet_since = time.monotonic()
                    yield found
                    if isinstance(found, ChatReply):
                        return
                elif heartbeat is not None and time.monotonic() - quiet_since >= heartbeat:
                    quiet_since = time.monotonic()
                    yield Waiting()
        finally:
            self.close()

    def _match(self, raw: dict[str, Any]) -> ChatReply | ApprovalAsked | None:
        name = raw.get("name")
        if name not in (REPLY_READY, FUNCTION_FAILED, APPROVAL_REQUESTED):
            return None
        try:
            event = Event.model_validate(raw)
            if name == APPROVAL_REQUESTED:
                return self._approval(event.typed(ApprovalRequested))
            if name == FUNCTION_FAILED:
                failed = event.typed(FunctionFailed)
                if failed.event.get("id") == self.event_id:
                    raise ChatFailedError.of(failed.run_id, failure_reason(failed.error))
                return None
            reply = event.typed(ReplyReady)
        except (ValidationError, InvalidEventError):
            return None  # the bus validates built-in events; a malformed one is not our reply
        if reply.destination.chat_id != self.session_key or reply.channel != self._chat.channel:
            return None
        return ChatReply(response=reply.response, run_id=reply.run_id, session_key=self.session_key)

    def _approval(self, request: ApprovalRequested) -> ApprovalAsked | None:
        target = request.reply
        if target.destination.chat_id != self.session_key or target.channel != self._chat.channel:
            return None
        return ApprovalAsked(
            approval_id=request.approval_id,
            tool=request.tool,
            summary=request.summary,
            timeout=request.timeout,
        )

    def close(self) -> None:
        """Stop following the message. Idempotent; must not raise."""
        self._feed.close()

    def __enter__(self) -> Exchange:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ChatSession:
    """A conversation with the agent through the bus, as one sender on one channel.

    `session_key` is the conversation (None: a fresh one); `new_session` starts another.
    `timeout` bounds each wait for a reply. Replies are matched by channel and chat id, so
    two clients sharing a session key may see each other's replies. Not thread-safe. Raises
    `InvalidEventError` when the session key or channel would be refused by the bus.
    `feeds` is where exchanges read from: by default each holds connections of its own
    (`DirectFeeds`, fine for one exchange at a time: the terminal chat); a process with many
    waiting exchanges shares one reader (`harness.chat_hub.ChatHub`).
    """

    def __init__(
        self,
        runtime: Runtime,
        session_key: str | None = None,
        *,
        channel: str = "cli",
        sender: Sender = TERMINAL_SENDER,
        timeout: float = DEFAULT_TIMEOUT_S,
        poll_interval: float = POLL_INTERVAL_S,
        can_answer: bool = False,
        feeds: FeedSource | None = None,
    ) -> None:
        self.runtime = runtime
        self.feeds = feeds or DirectFeeds(poll_interval)
        self.can_answer = can_answer
        self.channel = channel
        self.sender = sender
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.session_key = session_key or new_session_key(channel)
        chat_message("", self.session_key, channel=channel, sender=sender)  # fail early

    def new_session(self) -> str:
        """Switch to a fresh random session key and return it."""
        self.session_key = new_session_key(self.channel)
        return self.session_key

    def send(self, text: str) -> Exchange:
        """Publish `text` and return the exchange to follow, listening before publishing so
        no progress is missed. Raises `InvalidEventError` (nothing sent) or
        `ChatUnavailableError`."""
        event = chat_message(
            text,
            self.session_key,
            channel=self.channel,
            sender=self.sender,
            can_answer=self.can_answer,
        )
        try:
            feed = self.feeds.open(self.runtime, self.session_key, self.channel, event.id)
        except BusUnavailableError as exc:
            raise ChatUnavailableError("the event bus is unavailable") from exc
        try:
            result = publish(event, runtime=self.runtime)
        except BusUnavailableError as exc:
            feed.close()
            raise ChatUnavailableError("the event bus is unavailable") from exc
        except BaseException:
            feed.close()
            raise
        log.debug("chat message %s sent to session %s", result.event_id, self.session_key)
        return Exchange(self, result.event_id, feed)

    def answer(self, approval_id: str, decision: str) -> None:
        """Answer an approval request of this session: `approve`, `deny` or `session` (allow
        the tool for the rest of the session). The agent's `answer-approval` function decides
        whether it counts (the first answer does). Raises `InvalidEventError` for another
        decision, `ChatUnavailableError` when Redis fails."""
        data = {
            "approval_id": approval_id,
            "decision": decision,
            "subject": f"{self.channel}:user:{self.sender.id}",
            "label": self.sender.name or self.sender.id,
            "channel": self.channel,
            "destination": {"chat_id": self.session_key},
        }
        # the bus validates built-in events: a bad decision raises InvalidEventError here
        event = validate_event(
            Event(name=APPROVAL_GIVEN, id=f"{self.channel}-answer-{approval_id}", data=data)
        )
        try:
            publish(event, runtime=self.runtime)
        except BusUnavailableError as exc:
            raise ChatUnavailableError("the event bus is unavailable") from exc

    def ask(self, text: str) -> ChatReply:
        """Send `text` and wait for the reply, ignoring progress. Raises like `send` and
        `Exchange.updates`."""
        with self.send(text) as exchange:
            return next(u for u in exchange.updates() if isinstance(u, ChatReply))
