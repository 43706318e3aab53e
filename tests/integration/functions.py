"""Functions that the integration tests' worker subprocesses load.

They record what they do in Redis (the same server the test uses), so the test process can
observe executions that happen in other processes.
"""

from __future__ import annotations

import os
import time
from functools import cache

import redis

from harness.runtime import Context, Singleton, event, function
from harness.settings import get_settings


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)


def _work(run_id: str, index: int, seconds: float) -> int:
    _redis().incr(f"it:exec:{run_id}:{index}")
    time.sleep(seconds)
    return index


@function(id="it-slow-steps", trigger=event("it/slow"), retries=3)
def slow_steps(ctx: Context) -> list[int]:
    """Five steps of `data.seconds` each; every execution of a step is counted."""
    seconds = float(ctx.event.data.get("seconds", 0.4))
    return [ctx.step.run("work", _work, ctx.run_id, i, seconds) for i in range(5)]


def _enter_exclusive(key: str, n: int) -> None:
    r = _redis()
    active = r.incr(f"it:active:{key}")
    r.rpush(f"it:actives:{key}", active)
    r.rpush(f"it:order:{key}", n)
    time.sleep(0.02)
    r.decr(f"it:active:{key}")


@function(
    id="it-serial",
    trigger=event("it/serial"),
    singleton=Singleton(key="event.data.key", mode="queue"),
)
def serial(ctx: Context) -> None:
    """Records how many runs of the same key are active at once (must always be 1)."""
    ctx.step.run("enter", _enter_exclusive, ctx.event.data["key"], ctx.event.data["n"])


def _slow_until_cancelled(ctx: Context, limit: float) -> str:
    # an in-flight step that supports aborting: it watches ctx.cancelled
    if ctx.cancelled.wait(limit):
        return "aborted"
    return "finished"


@function(
    id="it-chat",
    trigger=event("it/chat"),
    singleton=Singleton(key="event.data.session", mode="cancel"),
)
def chat(ctx: Context) -> None:
    """A chat turn in cancel mode; its long step aborts when the run is cancelled."""
    text = ctx.event.data["text"]
    _redis().rpush(f"it:started:{ctx.event.data['session']}", text)
    ctx.step.run("think", _slow_until_cancelled, ctx, float(ctx.event.data.get("think", 0.0)))
    steering = [e.data["text"] for e in ctx.step.take_inbox()]
    ctx.step.run(
        "reply",
        lambda: _redis().rpush(
            f"it:replied:{ctx.event.data['session']}", "+".join([text, *steering])
        ),
    )


@function(id="it-waiter", trigger=event("it/order"))
def waiter(ctx: Context) -> str:
    """Sleeps a second, then waits for the order's approval (or times out)."""
    ctx.step.sleep("settle", "1s")
    approval = ctx.step.wait_for_event(
        "approval", event="it/approved", match="data.order", timeout="20s"
    )
    return approval.data["by"] if approval else "timeout"


@function(id="it-where", trigger=event("it/where"))
def where(ctx: Context) -> str:
    """Records, in `it:where`, the working directory of the worker that ran it and the
    workspace it resolved, read from its settings (a worker started elsewhere reads its own
    `.env`, not the test's environment)."""
    settings = get_settings()
    place = f"{os.getcwd()}|{settings.agent_workspace.resolve()}"
    redis.Redis.from_url(settings.redis_url or "", decode_responses=True).rpush("it:where", place)
    time.sleep(float(ctx.event.data.get("seconds", 0.2)))
    return place
