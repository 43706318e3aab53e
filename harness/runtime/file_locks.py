"""Redis locks on shared files: the cross-host side of `harness.shared_lock`.

A lock is redis-py's `Lock` (SET NX PX with a random token, released by a script that checks
the token) on `Keys.file_lock(name)`. It expires after `timeout` seconds, so a host that dies
holding it does not stop the fleet; a holder that outlives it only logs on release, because
the writes it guards are single appends or atomic renames. Redis errors leave as
`BusUnavailableError`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.exceptions import LockNotOwnedError

from harness.errors import BusUnavailableError
from harness.runtime.instance import Runtime
from harness.runtime.keys import Keys

log = logging.getLogger(__name__)

LOCK_TIMEOUT_S = 60.0
"""How long a lock lives without release: far beyond one append or rename of a file."""
LOCK_WAIT_S = 120.0
"""How long a writer waits for a lock before giving up (its durable step is then retried)."""


class RedisFileLocks:
    """`harness.shared_lock.FileLocks` on one Redis and key prefix. Thread-safe: each `hold`
    takes a lock object of its own."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        *,
        timeout: float = LOCK_TIMEOUT_S,
        wait: float = LOCK_WAIT_S,
    ) -> None:
        self._client = client
        self._keys = keys
        self._timeout = timeout
        self._wait = wait

    @contextmanager
    def hold(self, name: str) -> Iterator[None]:
        """Hold the lock `name` for the block. Raises `BusUnavailableError` when it is not
        free within `wait` seconds or Redis fails; a lock that expired meanwhile is logged."""
        lock = self._client.lock(
            self._keys.file_lock(name),
            timeout=self._timeout,
            blocking_timeout=self._wait,
            thread_local=False,
        )
        try:
            acquired = lock.acquire()
        except redis.RedisError as exc:
            raise BusUnavailableError(f"cannot take the lock on {name}: {exc}") from exc
        if not acquired:
            raise BusUnavailableError(f"the lock on {name} stayed taken for {self._wait:g} s")
        try:
            yield
        finally:
            try:
                lock.release()
            except LockNotOwnedError:
                log.warning("the lock on %s expired before its holder was done", name)
            except redis.RedisError as exc:
                log.warning("could not release the lock on %s (it expires): %s", name, exc)


def redis_file_locks(runtime: Runtime) -> RedisFileLocks:
    """Cross-host file locks on `runtime`'s Redis, under its key prefix."""
    return RedisFileLocks(runtime.redis, runtime.keys)
