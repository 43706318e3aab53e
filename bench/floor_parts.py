"""Each part of `bench.turn_floor`, measured alone: the servers in subprocesses of their own
(their CPU read from `/proc`), the callers on this process's event loop (its CPU), the fakes
and the webhook's client in `bench.floor_peers` processes (their CPU not counted).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anthropic
import httpx2
import redis
from anthropic.types import Message

from bench import floor_apps
from harness.fleet.embedded_redis import EmbeddedRedis, free_port
from tests.processes import stop_groups

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0
WORKER_THREADS = 16
"""The Celery worker's threads: Harness's default `WORKER_CONCURRENCY`."""
MODEL_REQUEST = json.dumps(
    {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hello there, what is on today?"}],
        "stream": True,
    }
).encode()
"""A short Messages request, rendered once (as Harness renders its body, not the SDK)."""


def cpu_ms(pid: int) -> float:
    """CPU time in ms the threads of process `pid` alive now have used, from
    `/proc/<pid>/task/*/schedstat` (nanoseconds, finer than `/proc/<pid>/stat`'s ticks); a
    thread that ended between two readings takes its time with it, so measure processes
    whose threads last (servers, pools)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError):
            continue  # the thread ended while being read
    return total / 1e6


@dataclass(frozen=True)
class WebhookCost:
    """CPU ms per webhook request of the web process and of Redis."""

    server_ms: float
    redis_ms: float


@dataclass(frozen=True)
class TaskCost:
    """CPU ms per task round of the worker, the sender and Redis."""

    worker_ms: float
    sender_ms: float
    redis_ms: float


def _spawn(command: list[str], redis_url: str, **options: Any) -> subprocess.Popen[str]:
    env = os.environ | {"FLOOR_REDIS_URL": redis_url}
    return subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, text=True, **options
    )


def _line(stream: IO[str] | None, expected: str) -> str:
    """The next line of `stream`, which must start with `expected`."""
    line = stream.readline() if stream is not None else ""
    if not line.startswith(expected):
        raise RuntimeError(f"expected a line starting {expected!r}, got {line!r}")
    return line.strip()


def webhook_requests(redis_server: EmbeddedRedis, requests: int, concurrency: int) -> WebhookCost:
    """`requests` POSTs of a Telegram update to the bare webhook, at most `concurrency` at
    once from a client process, after `concurrency` more to open its connections. The server
    keeps idle connections 120 s (uvicorn's default 5 s closed some under a loaded machine's
    warm-up, racing the client's next request on them)."""
    port = free_port()
    server = _spawn(
        [sys.executable, "-m", "uvicorn", "bench.floor_apps:webhook", "--port", str(port),
         "--no-access-log", "--log-level", "warning", "--timeout-keep-alive", "120"],
        redis_server.url,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/webhook"
    client = None
    try:
        _wait_for_http(url, server)
        client = _spawn(
            [sys.executable, "-m", "bench.floor_peers", "load", url, str(requests),
             str(concurrency), str(concurrency)],
            redis_server.url, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        _line(client.stdout, "warm")
        before = cpu_ms(server.pid), cpu_ms(_redis_pid(redis_server))
        assert client.stdin is not None
        client.stdin.write("go\n")
        client.stdin.flush()
        failed = int(_line(client.stdout, "done").split()[1])
        after = cpu_ms(server.pid), cpu_ms(_redis_pid(redis_server))
    finally:
        stop_groups([p for p in (server, client) if p is not None], timeout=10)
    if failed:
        raise RuntimeError(f"{failed} of {requests} webhook requests were not answered 200")
    with redis.Redis.from_url(redis_server.url) as check:
        check.delete(floor_apps.UPDATES)
    return WebhookCost((after[0] - before[0]) / requests, (after[1] - before[1]) / requests)


def _wait_for_http(url: str, process: subprocess.Popen[str]) -> None:
    """Until `url` answers anything, or `process` exits (RuntimeError), or `START_TIMEOUT_S`."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {START_TIMEOUT_S} s")


def _redis_pid(redis_server: EmbeddedRedis) -> int:
    with redis.Redis.from_url(redis_server.url) as client:
        return int(client.info("server")["process_id"])


def celery_round(redis_server: EmbeddedRedis, tasks: int) -> TaskCost:
    """`tasks` empty tasks sent from this thread and executed by a Celery worker with the
    threads pool, after as many sent to warm it up; each batch ends with `floor.done`."""
    worker = _spawn(
        [sys.executable, "-m", "celery", "-A", "bench.floor_apps:tasks", "worker", "-P",
         "threads", "-c", str(WORKER_THREADS), "-Q", floor_apps.QUEUE, "--without-gossip",
         "--without-mingle", "-l", "WARNING"],
        redis_server.url, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    app = floor_apps.tasks
    app.conf.broker_url = redis_server.url
    redis_pid = _redis_pid(redis_server)
    try:
        # the wait for a batch's end outlasts redis-py's default socket timeout
        with redis.Redis.from_url(redis_server.url, socket_timeout=START_TIMEOUT_S + 5) as client:

            def batch() -> float:
                """Send the batch and wait for its end; the sender's CPU in ms."""
                started = time.process_time()
                for _ in range(tasks):
                    app.send_task(floor_apps.EMPTY_TASK, queue=floor_apps.QUEUE)
                spent = time.process_time() - started
                app.send_task(floor_apps.DONE_TASK, queue=floor_apps.QUEUE)
                if client.blpop([floor_apps.DONE], timeout=START_TIMEOUT_S) is None:
                    raise RuntimeError("the Celery worker did not finish the batch")
                return spent * 1000

            batch()
            before = cpu_ms(worker.pid), cpu_ms(redis_pid)
            sender = batch()
            after = cpu_ms(worker.pid), cpu_ms(redis_pid)
    finally:
        stop_groups([worker], timeout=10)
        app.pool.force_close_all()
    return TaskCost((after[0] - before[0]) / tasks, sender / tasks, (after[1] - before[1]) / tasks)


@dataclass(frozen=True)
class Fakes:
    """Where `bench.floor_peers fakes` serves."""

    model_url: str
    model_key: str
    telegram_url: str
    telegram_token: str


@contextmanager
def running_fakes() -> Iterator[Fakes]:
    """The fakes in a process of their own, stopped on leaving."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.floor_peers", "fakes"], cwd=ROOT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        yield Fakes(**json.loads(_line(process.stdout, "{")))
    finally:
        stop_groups([process], timeout=10)


def model_calls(fakes: Fakes, calls: int, concurrency: int) -> float:
    """This process's CPU in ms per streamed model call through `AsyncAnthropic`, `calls`
    of them at most `concurrency` at once on one loop, after `concurrency` to warm up."""

    async def run() -> float:
        limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        client = anthropic.AsyncAnthropic(
            api_key=fakes.model_key, base_url=fakes.model_url, max_retries=0,
            http_client=anthropic.DefaultAsyncHttpxClient(limits=limits),
        )  # fmt: skip

        async def call() -> None:
            stream = await client.post(
                "/v1/messages", cast_to=Message, content=MODEL_REQUEST, stream=True,
                stream_cls=anthropic.AsyncStream[object],  # events as dicts, as Harness reads
            )  # fmt: skip
            async for _event in stream:
                pass

        async with client:
            return await _cpu_ms_per_call(call, calls, concurrency)

    return asyncio.run(run())


def send_messages(fakes: Fakes, calls: int, concurrency: int) -> float:
    """This process's CPU in ms per Bot API `sendMessage` through `httpx2.AsyncClient`, as
    `model_calls` counts it."""

    async def run() -> float:
        limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        url = f"{fakes.telegram_url}/bot{fakes.telegram_token}/sendMessage"
        async with httpx2.AsyncClient(limits=limits, timeout=30.0) as client:

            async def call() -> None:
                response = await client.post(url, json={"chat_id": 42, "text": "ok"})
                if not response.json()["ok"]:
                    raise RuntimeError(f"sendMessage failed: {response.text}")

            return await _cpu_ms_per_call(call, calls, concurrency)

    return asyncio.run(run())


async def _cpu_ms_per_call(call: Callable[[], Awaitable[None]], calls: int, at_once: int) -> float:
    """`call()` `at_once` times to warm up, then `calls` times, at most `at_once` at once;
    this process's CPU in ms per timed call."""
    gate = asyncio.Semaphore(at_once)

    async def one() -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one() for _ in range(at_once)))
    started = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return 1000 * (time.process_time() - started) / calls
