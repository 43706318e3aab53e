"""kombu's Redis transports, closing a connection Redis dropped without crashing the worker.

When Redis goes away (a restart, or a Sentinel failover), Celery's consumer collects its
broker connection and then closes it. kombu's close of a channel whose `BRPOP` was in flight
fails on the dead socket before closing anything, and its loop over a connection's channels
stops at the first that fails: channels stay open after the transport has dropped its
client. Closing one later hands its unacknowledged kicks back through a new pool built from
that client's URL, which is gone: kombu raised `AttributeError`. Celery takes that for a bug,
not a broker error, and the worker stopped ("Unrecoverable error") instead of reconnecting.

These transports close every channel, a channel closes even when its last read fails, and a
channel whose transport is gone raises redis-py's `ConnectionError`, one of the transport's
connection errors: Celery ignores it, as it does the dead socket's, and reconnects. A kick
read but not yet acknowledged (acks come as a kick starts) is put back on its queue when its
channel closes, if Redis takes it; the scheduler re-kicks any run whose kick is lost. (kombu's
acknowledgement emulation, its unacked index, is off: `celery_app.configure`.)

`install()` makes kombu use them for `redis://`, `rediss://` and `sentinel://` URLs in this
process (under those schemes, so URLs and log lines read as before); the Celery seam calls it.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu import transport as kombu_transport
from kombu.transport import redis as kombu_redis


class _ClosedTransportGuard:
    """A channel that closes even when reading its last `BRPOP` fails, and fails as a lost
    connection when its transport has already dropped its client."""

    connection: Any
    closed: bool
    connection_errors: tuple[type[BaseException], ...]

    def close(self) -> None:
        """kombu's close, done again when it stopped at reading the last `BRPOP`'s answer
        (the read is over by then); raises a connection error either way."""
        try:
            super().close()  # type: ignore[misc]
        except self.connection_errors:
            if self.closed:
                raise
            # kombu stopped at reading the answer to its last BRPOP, before closing anything;
            # that read is done now, so this pass closes the channel (or fails as lost too).
            super().close()  # type: ignore[misc]
            raise

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is None or self.connection.client is None:
            raise redis.ConnectionError("the broker connection is closed")
        params: dict[str, Any] = super()._connparams(asynchronous)  # type: ignore[misc]
        return params


class Channel(_ClosedTransportGuard, kombu_redis.Channel):
    """kombu's Redis channel; see the module."""


class SentinelChannel(_ClosedTransportGuard, kombu_redis.SentinelChannel):
    """kombu's Sentinel channel; see the module."""


class _ClosesEveryChannel:
    """Closes every channel of a connection even when closing one fails: kombu's loop stops
    at the first failure, leaving the rest open with their deliveries unacknowledged until
    the process exits (when kombu tries again, and prints a traceback if Redis is down)."""

    connection_errors: tuple[type[BaseException], ...]

    _avail_channels: list[Any]
    channels: list[Any]

    def close_connection(self, connection: Any) -> None:
        """kombu's close of every channel, resumed after each channel that fails (kombu has
        taken it off its lists by then); raises the first connection error at the end."""
        first: BaseException | None = None
        for _ in range(1 + len(self._avail_channels) + len(self.channels)):
            try:
                super().close_connection(connection)  # type: ignore[misc]
                break
            except self.connection_errors as exc:
                first = first or exc
        if first is not None:
            raise first


class Transport(_ClosesEveryChannel, kombu_redis.Transport):  # type: ignore[misc]
    """kombu's Redis transport (`redis://`, `rediss://`) with the guarded channel."""

    Channel = Channel


class SentinelTransport(_ClosesEveryChannel, kombu_redis.SentinelTransport):  # type: ignore[misc]
    """kombu's Sentinel transport (`sentinel://`) with the guarded channel."""

    Channel = SentinelChannel


_BY_SCHEME = {
    "redis": f"{__name__}:Transport",
    "rediss": f"{__name__}:Transport",
    "sentinel": f"{__name__}:SentinelTransport",
}


def install() -> None:
    """Make kombu pick these transports for the Redis and Sentinel URL schemes in this
    process. Idempotent; affects connections made after it."""
    kombu_transport.TRANSPORT_ALIASES.update(_BY_SCHEME)
    cache = getattr(kombu_transport, "_transport_cache", {})
    for scheme in _BY_SCHEME:
        cache.pop(scheme, None)  # a class resolved before this call
