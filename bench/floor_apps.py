"""The two bare servers `bench.turn_floor` measures, with no Harness code: a webhook on FastAPI
and a Celery app with an empty task, each doing the least a fleet's part must do.

- `webhook` (`uvicorn bench.floor_apps:webhook`): `POST /webhook` checks Telegram's secret
  header, parses the update (a handler must read it to route it) and pushes the raw body onto
  a Redis list with one command (`LPUSH`): what a webhook must do before it answers 200.
- `tasks` (`celery -A bench.floor_apps:tasks worker -P threads`): Celery on the Redis broker
  with the settings of `harness/runtime/celery_app.py` (JSON, results ignored, acks early,
  prefetch off) but Celery's own thread pool and transport; `floor.empty` does nothing,
  `floor.done` pushes onto `DONE` so the sender knows every task before it was taken.

Both read the Redis URL from `FLOOR_REDIS_URL` when imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis
from celery import Celery
from fastapi import FastAPI, Request, Response
from redis.asyncio import BlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis

REDIS_URL = os.environ.get("FLOOR_REDIS_URL", "redis://127.0.0.1:6379/0")
SECRET = "floor-secret"
UPDATES = "floor:updates"
"""The list the webhook pushes each update onto."""
QUEUE = "floor"
DONE = "floor:done"
"""The list `floor.done` pushes onto: every task sent before it has been taken."""
EMPTY_TASK, DONE_TASK = "floor.empty", "floor.done"


@asynccontextmanager
async def _redis(app: FastAPI) -> AsyncIterator[None]:
    # a blocking pool, as Harness's kicker has: a request waits for a connection rather than
    # failing when more are in flight than the pool holds
    pool = BlockingConnectionPool.from_url(REDIS_URL, max_connections=64, timeout=30)
    app.state.redis = AsyncRedis(connection_pool=pool)
    yield
    await app.state.redis.aclose(close_connection_pool=True)


webhook = FastAPI(lifespan=_redis)


@webhook.post("/webhook")
async def receive(request: Request) -> Response:
    """200 once the update is on the Redis list; 401 without the secret header."""
    if request.headers.get("x-telegram-bot-api-secret-token") != SECRET:
        return Response(status_code=401)
    body = await request.body()
    json.loads(body)  # the update is read, as a handler must to route it
    await request.app.state.redis.lpush(UPDATES, body)
    return Response(status_code=200)


tasks = Celery("floor", broker=REDIS_URL)
tasks.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=False,
    worker_cancel_long_running_tasks_on_connection_loss=True,
    worker_prefetch_multiplier=1,
    worker_disable_prefetch=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    task_default_queue=QUEUE,
)


@tasks.task(name=EMPTY_TASK, ignore_result=True)  # type: ignore[untyped-decorator]
def empty() -> None:
    """Nothing: the round of a task through the broker and the worker is what is measured."""


@tasks.task(name=DONE_TASK, ignore_result=True)  # type: ignore[untyped-decorator]
def done() -> None:
    """Mark the end of a batch: push onto `DONE`."""
    with redis.Redis.from_url(REDIS_URL) as client:
        client.lpush(DONE, 1)
