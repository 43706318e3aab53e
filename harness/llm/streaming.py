"""Reading an SDK event stream so that a `threading.Event` can abort it mid-flight, and
taking its events as decoded JSON (`take_event`).

A blocking socket read cannot be interrupted from the thread that is blocked in it, so when
a cancel event is given the SDK call and its iteration run on a helper thread that hands
events over through a queue. The calling thread watches the cancel event while it waits; on
cancel it shuts the socket down (which wakes the blocked read), tells the helper to close
the stream, and returns at once without waiting for the helper.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from harness.llm.provider import TextSink

E = TypeVar("E")
E_co = TypeVar("E_co", covariant=True)

# How often a waiting caller looks at its cancel event, in seconds. A threading.Event cannot
# notify a waiter of another event, so some polling is unavoidable.
CANCEL_POLL_SECONDS = 0.02


class EventStream(Iterable[E_co], Protocol[E_co]):
    """What the SDKs' `Stream` objects offer: iteration and `close()`."""

    def close(self) -> None:
        """Close the HTTP response."""
        ...


class StreamCancelled(Exception):
    """Raised by `events` when the cancel event was set. Internal to the providers."""


def events(
    open_stream: Callable[[], EventStream[E]], cancel: threading.Event | None
) -> Iterator[E]:
    """Yield the events of the stream `open_stream()` returns, closing it at the end.

    Without `cancel` this iterates in the calling thread. With it, raises `StreamCancelled`
    as soon as the event is seen set (also before any request is sent); exceptions of the
    SDK call propagate to the caller unchanged either way.
    """
    if cancel is None:
        stream = open_stream()
        try:
            yield from stream
        finally:
            stream.close()
        return
    if cancel.is_set():
        raise StreamCancelled
    pump: _Pump[E] = _Pump(open_stream)
    pump.start()
    try:
        while True:
            try:
                kind, item = pump.out.get(timeout=CANCEL_POLL_SECONDS)
            except queue.Empty:
                if cancel.is_set():
                    raise StreamCancelled from None
                continue
            if cancel.is_set():
                raise StreamCancelled
            if kind == "end":
                return
            if kind == "error":
                assert isinstance(item, BaseException)
                raise item
            yield item  # type: ignore[misc]  # kind == "event" carries an E
    finally:
        pump.abandon()


class _Pump(threading.Thread, Generic[E]):
    """Opens and drains one stream on its own thread. Never lets an exception escape."""

    def __init__(self, open_stream: Callable[[], EventStream[E]]) -> None:
        super().__init__(name="model-stream", daemon=True)
        self.out: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self._open = open_stream
        self._abandoned = threading.Event()
        self._lock = threading.Lock()
        self._stream: EventStream[E] | None = None

    def run(self) -> None:
        stream: EventStream[E] | None = None
        try:
            stream = self._open()
            with self._lock:
                self._stream = stream
            if self._abandoned.is_set():  # cancelled while waiting for the response headers
                return
            for event in stream:
                if self._abandoned.is_set():
                    return
                self.out.put(("event", event))
            self.out.put(("end", None))
        except BaseException as exc:  # handed to the caller, who re-raises it
            if not self._abandoned.is_set():
                self.out.put(("error", exc))
        finally:
            if stream is not None:
                with contextlib.suppress(Exception):
                    stream.close()

    def abandon(self) -> None:
        """Stop the stream from the caller's thread: the helper exits at its next step."""
        self._abandoned.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            _shutdown_socket(stream)


def _shutdown_socket(stream: object) -> None:
    """Shut down the stream's socket, if it can be reached, so a read blocked on it returns."""
    response: Any = getattr(stream, "response", None)
    extensions = getattr(response, "extensions", None) or {}
    network_stream = extensions.get("network_stream")
    if network_stream is None:
        return
    with contextlib.suppress(Exception):
        sock = network_stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Tool-call arguments assembled from streamed fragments, or None if they are not a JSON
    object. An empty string means no arguments."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def take_event(take: Callable[[Any], str | None], event: object, on_text: TextSink | None) -> None:
    """Apply one streamed event, as decoded JSON, with `take` (which returns the answer text
    the event adds, if any), then hand that text to `on_text`. Raises `ValueError` when
    `take` finds the event not of its type's shape (a missing key, a wrong type), so that a
    provider calls it a malformed stream as it does an event that is not JSON; an error of
    `on_text` itself propagates unchanged."""
    try:
        text = take(event)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"unexpected event {str(event)[:200]!r}") from exc
    if text and on_text is not None:
        on_text(text)
