"""Translating redis errors into `BusUnavailableError` for methods that callers outside the
runtime use (the CLI, the web, channels), so that none of them needs to know redis."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import redis

from harness.errors import BusUnavailableError

P = ParamSpec("P")
T = TypeVar("T")


def on_bus(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate a method so a `redis.RedisError` it raises becomes `BusUnavailableError`
    ("could not <what>"), with the redis error as its cause."""

    def decorate(method: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(method)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return method(*args, **kwargs)
            except redis.RedisError as exc:
                raise BusUnavailableError(f"could not {what} ({exc})") from exc

        return wrapper

    return decorate
