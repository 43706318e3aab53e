"""One reader per process for many waiters: the events stream and the pub/sub channels of a
pattern, fanned out to inboxes that hold no connection.

A web process with hundreds of open chat streams must not hold Redis connections per stream
(redis-py's pool stops at 100; two per stream failed at ~48). `Fanout` keeps one thread
blocked in XREAD on the events stream and one on a pattern pub/sub subscription, and hands
each event or message to the inboxes registered under its key: an event's key comes from the
`route` given at construction, a message's key is its channel name.

Losing Redis: each reader retries every `retry_s`, the stream reader from its last cursor, so
no event still in the (capped) stream is missed; `down` says a reader is failing right now,
so a waiter whose deadline passes can tell an outage from a silence. Messages published while
the pub/sub reader is down are lost, as they are for any subscriber (pub/sub is best effort).

    fanout = Fanout(runtime, route, runtime.keys.progress_pattern()).start()
    with fanout.inbox({"chat:api:s1", runtime.keys.progress("s1")}) as inbox:
        delivery = inbox.get(timeout=1.0)       # Delivery | None
    fanout.stop()
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

from harness.errors import BusUnavailableError
from harness.runtime.broadcast import Subscription
from harness.runtime.instance import Runtime
from harness.runtime.stream import latest_cursor, read_entries, stream_id

log = logging.getLogger(__name__)

Route = Callable[[dict[str, Any]], str | None]
"""The key an event is delivered under (None: nobody's); must not raise for odd events."""

BLOCK_MS = 1000
"""How long one XREAD waits: also how long `stop` may wait for the stream reader."""
RETRY_S = 0.5


@dataclass(frozen=True)
class Delivery:
    """One thing for a waiter: an event from the stream (`payload` its dict, `entry_id` its
    stream id) or a pub/sub message (`payload` its data, `entry_id` empty)."""

    kind: Literal["event", "message"]
    payload: Any
    entry_id: str = ""


class Inbox:
    """What one waiter receives, in arrival order, under `keys`. Holds no connection; stops
    receiving at `close` (idempotent, must not raise). Events at or before `after` (a stream
    id) are dropped: a waiter sees only events appended after it looked."""

    def __init__(self, fanout: Fanout, keys: frozenset[str], after: str) -> None:
        self.keys = keys
        self._after = stream_id(after)
        self._fanout = fanout
        self._queue: queue.SimpleQueue[Delivery] = queue.SimpleQueue()

    def put(self, delivery: Delivery) -> None:
        """Hand the inbox one delivery (the readers' side). Never blocks."""
        if delivery.kind == "event" and stream_id(delivery.entry_id) <= self._after:
            return
        self._queue.put(delivery)

    def get(self, timeout: float) -> Delivery | None:
        """The next delivery, waiting up to `timeout` seconds; None when none came."""
        try:
            return self._queue.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None

    @property
    def down(self) -> bool:
        """True while a reader of the fan-out cannot reach Redis."""
        return self._fanout.down

    def close(self) -> None:
        """Stop receiving. Idempotent; must not raise."""
        self._fanout.drop(self)

    def __enter__(self) -> Inbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Fanout:
    """The process's readers of the events stream and of the channels matching `pattern`.
    Thread-safe; `start` once (idempotent), `stop` at shutdown (idempotent)."""

    def __init__(
        self,
        runtime: Runtime,
        route: Route,
        pattern: str,
        *,
        block_ms: int = BLOCK_MS,
        retry_s: float = RETRY_S,
    ) -> None:
        self.runtime = runtime
        self.cursor = "0-0"
        """The stream id of the last event read: where a reader that lost Redis resumes."""
        self._route = route
        self._pattern = pattern
        self._block_ms = block_ms
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._inboxes: dict[str, set[Inbox]] = {}
        self._failing: set[str] = set()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._subscription: Subscription | None = None

    def start(self) -> Fanout:
        """Start both readers, after taking the stream's latest cursor and subscribing, so an
        inbox opened after this returns misses nothing published after it. Raises
        `BusUnavailableError` (nothing started) when Redis cannot be reached."""
        with self._lock:
            if self._threads:
                return self
            self.cursor = latest_cursor(self.runtime)
            self._subscription = self.runtime.broadcast.subscribe_pattern(self._pattern)
            for name, target in (("stream", self._read_stream), ("pubsub", self._read_pubsub)):
                thread = threading.Thread(target=target, name=f"fanout-{name}", daemon=True)
                self._threads.append(thread)
                thread.start()
        return self

    def inbox(self, keys: Iterable[str], after: str = "0-0") -> Inbox:
        """A new inbox receiving what is delivered under any of `keys` from now on."""
        box = Inbox(self, frozenset(keys), after)
        with self._lock:
            for key in box.keys:
                self._inboxes.setdefault(key, set()).add(box)
        return box

    def drop(self, box: Inbox) -> None:
        """Stop delivering to `box`. Idempotent."""
        with self._lock:
            for key in box.keys:
                boxes = self._inboxes.get(key)
                if boxes is not None:
                    boxes.discard(box)
                    if not boxes:
                        del self._inboxes[key]

    @property
    def down(self) -> bool:
        """True while a reader's last attempt to reach Redis failed."""
        return bool(self._failing)

    def stop(self) -> None:
        """Stop both readers and release their connections. Idempotent; must not raise."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=self._block_ms / 1000 + 5)
        if self._subscription is not None:
            self._subscription.close()

    def _deliver(self, key: str | None, delivery: Delivery) -> None:
        if key is None:
            return
        with self._lock:
            boxes = list(self._inboxes.get(key, ()))
        for box in boxes:
            box.put(delivery)

    def _read_stream(self) -> None:
        while not self._stopping.is_set():
            try:
                entries = read_entries(self.runtime, self.cursor, self._block_ms)
            except BusUnavailableError as exc:
                self._failed("stream", exc)
                continue
            self._failing.discard("stream")
            for entry_id, event in entries:
                self.cursor = entry_id
                self._deliver(self._safe_route(event), Delivery("event", event, entry_id))

    def _safe_route(self, event: dict[str, Any]) -> str | None:
        try:
            return self._route(event)
        except Exception:  # an odd event is nobody's; it must not stop the reader
            log.debug("fan-out skipped an event it could not route")
            return None

    def _read_pubsub(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._subscription is None:
                    self._subscription = self.runtime.broadcast.subscribe_pattern(self._pattern)
                got = self._subscription.get(self._block_ms / 1000)
            except BusUnavailableError as exc:
                if self._subscription is not None:
                    self._subscription.close()
                    self._subscription = None
                self._failed("pubsub", exc)
                continue
            self._failing.discard("pubsub")
            if got is not None:
                self._deliver(got[0], Delivery("message", got[1]))

    def _failed(self, reader: str, exc: BusUnavailableError) -> None:
        if reader not in self._failing:
            log.warning("fan-out %s reader lost Redis, retrying: %s", reader, type(exc).__name__)
        self._failing.add(reader)
        self._stopping.wait(self._retry_s)
