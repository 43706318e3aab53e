"""Many chat exchanges, one reader: the `FeedSource` of a process with many waiting clients.

`POST /api/chat` holds a stream open per message until its reply. Each used to hold a
progress subscription and a blocking XREAD of its own, two Redis connections, so a web process
failed past ~48 open streams. A `ChatHub` runs one `harness.runtime.fanout.Fanout` (one
XREAD reader, one pattern subscription to every session's progress) and routes to each
exchange what is its own: `agent.reply.ready` and `agent.approval.requested` by channel and
chat id, `function.failed` by the id of the message that started the run, progress by the
session's channel. An open exchange then holds no connection; only its publish borrows one.

The readers start on the first `open` and stop at `close` (the web app's shutdown). A reader
that loses Redis resumes from its cursor; a waiter sees the bus unavailable only when Redis
is still down at its deadline.
"""

from __future__ import annotations

import threading
from typing import Any

from harness.agent.progress import parse_progress
from harness.chat_feed import Feed, FeedItem
from harness.errors import BusUnavailableError
from harness.events import APPROVAL_REQUESTED, FUNCTION_FAILED, REPLY_READY
from harness.runtime import Runtime
from harness.runtime.fanout import Fanout, Inbox
from harness.runtime.stream import latest_cursor


def chat_key(channel: str, chat_id: object) -> str:
    """The route key of the replies and approval requests for one chat of one channel."""
    return f"chat\x00{channel}\x00{chat_id}"


def message_key(event_id: str) -> str:
    """The route key of the failure of a run started by message `event_id`."""
    return f"message\x00{event_id}"


def chat_route(event: dict[str, Any]) -> str | None:
    """Whose event this is: the key of the chat a reply or approval request goes to, of the
    message a failed run was started by; None for any other event. Never raises."""
    data = event.get("data")
    if not isinstance(data, dict):
        return None
    try:
        name = event.get("name")
        if name == REPLY_READY:
            return chat_key(data["channel"], data["destination"]["chat_id"])
        if name == APPROVAL_REQUESTED:
            target = data["reply"]
            return chat_key(target["channel"], target["destination"]["chat_id"])
        if name == FUNCTION_FAILED:
            return message_key(str(data["event"]["id"]))
    except (KeyError, TypeError):
        pass
    return None


class HubFeed:
    """One exchange's share of the hub: an inbox, no connection."""

    def __init__(self, inbox: Inbox) -> None:
        self._inbox = inbox

    def next(self, timeout: float) -> FeedItem | None:
        """See `Feed.next`. Never raises: while Redis is down it waits (see `down`)."""
        delivery = self._inbox.get(timeout)
        while delivery is not None and delivery.kind == "message":
            progress = parse_progress(delivery.payload)
            if progress is not None:
                return progress
            delivery = self._inbox.get(0)
        return None if delivery is None else dict(delivery.payload)

    @property
    def down(self) -> bool:
        """True while the hub's readers cannot reach Redis."""
        return self._inbox.down

    def close(self) -> None:
        """Stop receiving. Idempotent; must not raise."""
        self._inbox.close()


class ChatHub:
    """The `FeedSource` for a process serving many exchanges of one runtime. Thread-safe."""

    def __init__(self) -> None:
        self._fanout: Fanout | None = None
        self._lock = threading.Lock()
        self._closed = False

    def open(self, runtime: Runtime, session_key: str, channel: str, event_id: str) -> Feed:
        """A feed for the exchange, starting the readers on first use (on `runtime`: the
        hub serves one runtime). Raises `BusUnavailableError` when Redis fails, and after
        `close` (the web process is shutting down: the API answers 503, nothing was sent)."""
        fanout = self._started(runtime)
        after = latest_cursor(runtime)
        keys = {
            chat_key(channel, session_key),
            message_key(event_id),
            runtime.keys.progress(session_key),
        }
        return HubFeed(fanout.inbox(keys, after))

    def _started(self, runtime: Runtime) -> Fanout:
        with self._lock:
            if self._closed:
                raise BusUnavailableError("the web process is shutting down; send again")
            if self._fanout is None:
                pattern = runtime.keys.progress_pattern()
                self._fanout = Fanout(runtime, chat_route, pattern).start()
            return self._fanout

    @property
    def cursor(self) -> str | None:
        """The stream id of the last event the readers read (None: not started)."""
        return None if self._fanout is None else self._fanout.cursor

    @property
    def down(self) -> bool:
        """True while the readers cannot reach Redis."""
        return self._fanout is not None and self._fanout.down

    def close(self) -> None:
        """Stop the readers. Idempotent; must not raise."""
        with self._lock:
            self._closed = True
            fanout, self._fanout = self._fanout, None
        if fanout is not None:
            fanout.stop()
