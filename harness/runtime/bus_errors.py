"""The one place where redis-py's errors become ours: every family (connection, timeout, a
server's error reply, loading, read-only replica, authentication, Sentinel finding no
master) leaves the runtime as `BusUnavailableError` ("could not <what> (<redis's text>)"),
with the redis error as its cause, so that no caller outside the runtime (the CLI, the web,
channels, the agent) needs to know redis.

Two spellings of the same mapping: `@on_bus(what)` on a method or function that is one
operation, and `with redis_errors(what):` around the Redis part of a longer one (async code
too). Errors that are already ours pass through unchanged."""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import ParamSpec, TypeVar

import redis

from harness.errors import BusUnavailableError

P = ParamSpec("P")
T = TypeVar("T")


def bus_error(what: str, exc: redis.RedisError) -> BusUnavailableError:
    """Our error for `exc`, raised while trying to `what` (raise it `from exc`)."""
    return BusUnavailableError(f"could not {what} ({exc})")


class redis_errors:  # lower case: used like contextlib's context managers
    """`with redis_errors("read the cursor"):` raises `BusUnavailableError` from any
    `redis.RedisError` raised inside the block. Reusable and thread-safe (it keeps no state
    but `what`)."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:  # None, not bool: never swallows (so type checkers know a `return` inside ends)
        if isinstance(exc, redis.RedisError):
            raise bus_error(self.what, exc) from exc


def on_bus(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate a method so a `redis.RedisError` it raises becomes `BusUnavailableError`
    ("could not <what>"), with the redis error as its cause. For synchronous callables; an
    async one uses `redis_errors` around its awaits."""

    def decorate(method: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(method)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            # a plain try (no context manager): this wraps every step's commit
            try:
                return method(*args, **kwargs)
            except redis.RedisError as exc:
                raise bus_error(what, exc) from exc

        return wrapper

    return decorate
