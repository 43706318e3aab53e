"""What the benchmark's worker loads: one harness function and one plain Celery task.

Both write the moment their first line runs into Redis, so the benchmark measures the same
thing for each: from the publisher's call to the body's first line, across processes.
"""

from __future__ import annotations

import os
import time
from functools import cache

import redis

from harness.runtime import Context, event, function
from harness.runtime.celery_app import app


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


@function(id="bench-first-line", trigger=event("bench/ping"), retries=0)
def first_line(ctx: Context) -> None:
    """Records when its first line ran."""
    _redis().rpush(f"bench:started:{ctx.event.data['tag']}", repr(time.time()))


@app.task(name="bench.noop", ignore_result=True)  # type: ignore[untyped-decorator]
def noop(tag: str) -> None:
    """The floor: a plain Celery task that records when its first line ran."""
    _redis().rpush(f"bench:started:{tag}", repr(time.time()))


@function(id="bench-kicks", trigger=event("bench/kicks"), retries=0)
def kicked(ctx: Context) -> None:
    """A no-op run for the kick-storm benchmark."""


def _recovering_step(tag: str, index: int, seconds: float) -> int:
    _redis().rpush(f"bench:recovery:{tag}", f"{index} {os.getpid()} {time.time()!r}")
    time.sleep(seconds)
    return index


@function(id="bench-recovery", trigger=event("bench/recovery"), retries=3)
def recovering(ctx: Context) -> None:
    """`data.steps` steps of `data.seconds` each; each execution of a step records its index,
    its worker's pid and when it started in `bench:recovery:<tag>`."""
    data = ctx.event.data
    for i in range(int(data["steps"])):
        ctx.step.run("work", _recovering_step, data["tag"], i, float(data["seconds"]))
