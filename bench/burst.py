"""Benchmark of webhook bursts: 100 concurrent Telegram webhooks against a bare ASGI floor.

Two uvicorn servers run as subprocesses on loopback against one real Redis: ours (the app
with the webhook routes, `--workers` processes) and the floor, a bare ASGI app that answers
each POST after the same single Redis write (an XADD of the body) through redis.asyncio. A
client in this process sends `--bursts` bursts of `--concurrency` simultaneous POSTs to each,
alternating, and times every request. The aims: our p99 at most 50 ms, and our throughput at
least half the floor's. Each server's CPU time (all its processes, from /proc) over the whole
run, warm-up included, is divided by the requests it served: the cost of a webhook without
the client's share of the machine.

Then `--fresh-bursts` bursts of `--concurrency` NEW connections to ours, each carrying one
request (`Connection: close`), every other one a webhook and the rest `GET /healthz` (a PING
and two reads), timed from the connect to the last byte of the answer. The aim: the
webhooks' p99 at most 1.25 times the p99 of `/healthz` in the same bursts, with one and with
two web processes (`--workers`).

Usage: python -m bench.burst [--concurrency 100] [--bursts 20] [--fresh-bursts 20]
       [--workers 1] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import redis

from bench.stats import cpu_seconds, listening_sockets, percentile, process_tree
from harness.fleet.embedded_redis import EmbeddedRedis, free_port
from tests.channels.payloads import tg_private_text
from tests.fakes.telegram_api import FakeTelegramApi

ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-secret"
WARM_UP = 3  # bursts to each server before timing


def floor_app() -> Callable[..., Awaitable[None]]:
    """A bare ASGI app: read the body, XADD it to Redis, answer `{"ok":true}`."""
    from redis.asyncio import BlockingConnectionPool, Redis

    # the pool `harness.runtime.assembly.async_pool` gives ours
    pool = BlockingConnectionPool.from_url(os.environ["REDIS_URL"], max_connections=64, timeout=10)
    client = Redis(connection_pool=pool)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await client.xadd("benchburst:floor", {"body": body}, maxlen=10_000, approximate=True)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b'{"ok":true}'})

    return app


class Connection:
    """One keep-alive HTTP/1.1 connection with a minimal client: httpx2's own cost per request
    would dwarf a server's on this machine, so the load is sent as raw bytes."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, request: bytes) -> tuple[int, bytes]:
        """Send one request (raw bytes) and read its answer, reconnecting once if the server
        had closed the idle connection."""
        for attempt in (1, 2):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            try:
                return await self._exchange(request)
            except (ConnectionError, IndexError, asyncio.IncompleteReadError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _exchange(self, request: bytes) -> tuple[int, bytes]:
        assert self.writer is not None
        self.writer.write(request)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return int(status_line.split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _requests(path: str, first_id: int, count: int) -> list[bytes]:
    """`count` webhook POSTs as raw HTTP/1.1 bytes, each from its own chat, built before a
    burst so that none of the client's work on them falls inside its timing."""
    requests = []
    for update_id in range(first_id, first_id + count):
        update = tg_private_text(update_id=update_id, text=f"ping {update_id}")
        update["message"]["chat"]["id"] = update["message"]["from"]["id"] = 10_000 + update_id
        body = json.dumps(update).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
            f"Content-Type: application/json\r\nX-Telegram-Bot-Api-Secret-Token: {SECRET}\r\n\r\n"
        )
        requests.append(head.encode() + body)
    return requests


async def _burst(connections: list[Connection], path: str, first_id: int) -> list[float]:
    requests = _requests(path, first_id, len(connections))

    async def one(conn: Connection, request: bytes) -> float:
        started = time.perf_counter()
        status, answer = await conn.post(request)
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {answer[:200]!r}")
        return time.perf_counter() - started

    return list(await asyncio.gather(*map(one, connections, requests)))


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
FRESH_LAYOUTS = {"webhook": ("webhook",), "healthz": ("healthz",), "mixed": ("webhook", "healthz")}
"""A burst's requests, cycled over its connections: all webhooks, all `/healthz`, or each in
turn."""


def _fresh_requests(layout: str, first_id: int, count: int) -> list[tuple[str, bytes]]:
    """`count` one-shot requests (`Connection: close`) laid out as `FRESH_LAYOUTS[layout]`
    says, each labelled with what it is."""
    kinds = FRESH_LAYOUTS[layout]
    webhooks = iter(_requests("/webhooks/telegram", first_id, count))
    out: list[tuple[str, bytes]] = []
    for i in range(count):
        kind = kinds[i % len(kinds)]
        request = next(webhooks).replace(b"\r\n\r\n", CLOSE, 1) if kind == "webhook" else HEALTHZ
        out.append((kind, request))
    return out


CLOSE = b"\r\nConnection: close\r\n\r\n"


async def _fresh_burst(
    port: int, layout: str, first_id: int, count: int
) -> list[tuple[str, float]]:
    """One burst of `count` new connections at once (see `_fresh_requests`): each request's
    label and seconds from the connect to its whole answer."""
    requests = _fresh_requests(layout, first_id, count)

    async def one(request: bytes) -> float:
        started = time.perf_counter()
        conn = Connection(port)
        try:
            status, answer = await conn.post(request)
        finally:
            conn.close()
        if status != 200:
            raise RuntimeError(f"answered {status}: {answer[:200]!r}")
        return time.perf_counter() - started

    seconds = await asyncio.gather(*(one(request) for _, request in requests))
    return [(label, value) for (label, _), value in zip(requests, seconds, strict=True)]


async def measure_fresh(
    port: int, args: argparse.Namespace, redis_url: str, pids: list[int]
) -> dict[str, Any]:
    """`--fresh-bursts` rounds of new-connection bursts to ours (after one untimed round),
    each round a burst of webhooks, one of `/healthz` and one of both: every request's
    seconds, keyed `fresh_<layout>_<kind>`; per layout the CPU seconds our processes `pids`
    spent on its bursts (`cpu_<layout>_s`) and the Redis commands they made (`redis_<layout>`:
    name to calls and microseconds, from Redis's commandstats)."""
    out: dict[str, Any] = {}
    stats = redis.Redis.from_url(redis_url)
    gc.disable()
    try:
        for b in range(-1, args.fresh_bursts):
            for layout in FRESH_LAYOUTS:
                gc.collect()  # the client's own collections must not pause a timed burst
                stats.config_resetstat()
                cpu, redis_cpu = cpu_seconds(pids), _redis_cpu_s(stats)
                first_id = 600_000 + b * 1000 + (500 if layout == "mixed" else 0)
                timed = await _fresh_burst(port, layout, first_id, args.concurrency)
                if b < 0:
                    continue
                for key, used in (
                    (f"cpu_{layout}_s", cpu_seconds(pids) - cpu),
                    (f"redis_cpu_{layout}_s", _redis_cpu_s(stats) - redis_cpu),
                ):
                    out[key] = out.get(key, 0.0) + used  # fmt: skip
                for kind, value in timed:
                    out.setdefault(f"fresh_{layout}_{kind}", []).append(value)
                totals = out.setdefault(f"redis_{layout}", {})
                for name, counts in stats.info("commandstats").items():
                    calls, usec = totals.get(name, (0, 0))
                    totals[name] = (calls + counts["calls"], usec + counts["usec"])
    finally:
        gc.enable()
        stats.close()
    return out


def _redis_cpu_s(client: redis.Redis) -> float:
    """Seconds of CPU the Redis server has used (user + system, all its threads)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


async def measure(ports: dict[str, int], args: argparse.Namespace) -> dict[str, Any]:
    """Per target: every request's seconds and the seconds all its bursts took."""
    paths = {"ours": "/webhooks/telegram", "floor": "/"}
    pools = {
        name: [Connection(port) for _ in range(args.concurrency)] for name, port in ports.items()
    }
    out: dict[str, Any] = {"ours": [], "floor": [], "ours_s": 0.0, "floor_s": 0.0}
    gc.disable()
    try:
        for warm in range(WARM_UP):
            for name in ports:
                await _burst(pools[name], paths[name], 1 + warm * 1000)
        for b in range(args.bursts):
            for name in ports:
                gc.collect()  # the client's own collections must not pause a timed burst
                started = time.perf_counter()
                out[name] += await _burst(pools[name], paths[name], 100_000 + b * 1000)
                out[f"{name}_s"] += time.perf_counter() - started
    finally:
        gc.enable()
        for pool in pools.values():
            for conn in pool:
                conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--bursts", type=int, default=20)
    parser.add_argument("--fresh-bursts", type=int, default=20)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--floor", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="also write every request's seconds here")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedRedis(Path(tmp) / "redis", persist=False) as server,
        FakeTelegramApi() as telegram,
    ):
        ours_port, floor_port = free_port(), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "TELEGRAM_"))}
        env.update(
            REDIS_URL=server.url, HARNESS_KEY_PREFIX="benchburst", LOG_LEVEL="WARNING",
            AGENT_WORKSPACE=str(Path(tmp) / "workspace"), TELEGRAM_BOT_TOKEN=telegram.token,
            TELEGRAM_WEBHOOK_SECRET=SECRET, TELEGRAM_API_BASE_URL=telegram.base_url,
            TELEGRAM_MODE="webhook", HARNESS_FUNCTION_MODULES="",
        )  # fmt: skip
        python = sys.executable
        commands = [
            [python, "-m", "harness.cli", "web", "--port", str(ours_port),
             "--workers", str(args.workers)],
            [python, "-m", "uvicorn", "--factory", "bench.burst:floor_app", "--port",
             str(floor_port), "--log-level", "warning", "--no-access-log"],
        ]  # fmt: skip
        logs = [Path(tmp) / "ours.log", Path(tmp) / "floor.log"]
        procs = []
        for command, log in zip(commands, logs, strict=True):
            with log.open("wb") as sink:
                procs.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=sink))
        try:
            for port in (ours_port, floor_port):
                _wait_up(f"http://127.0.0.1:{port}/healthz")
            servers = {
                "ours": _serving(procs[0].pid, args.workers, ours_port),
                "floor": [procs[1].pid],
            }
            cpu_before = {pid: cpu_seconds([pid]) for pids in servers.values() for pid in pids}
            out = asyncio.run(measure({"ours": ours_port, "floor": floor_port}, args))
            for name, pids in servers.items():
                used = [cpu_seconds([pid]) - cpu_before[pid] for pid in pids]
                out[f"{name}_cpu_s"] = sum(used)
                out[f"{name}_cpu_by_process_s"] = used
            out.update(asyncio.run(measure_fresh(ours_port, args, server.url, servers["ours"])))
            out["served"] = (WARM_UP + args.bursts) * args.concurrency
            out["concurrency"] = args.concurrency
        except Exception:
            for log in logs:
                print(f"--- {log.name}\n{log.read_text()[-2000:]}", file=sys.stderr)
            raise
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=20)
    report(out, args)
    if args.json:
        args.json.write_text(json.dumps(out))


def _serving(pid: int, workers: int, port: int) -> list[int]:
    """The web process `pid` and, with several workers, its serving children once each
    listens on `port` (not multiprocessing's resource tracker). The load's keep-alive
    connections are opened once: a process that binds after them would get none."""
    deadline = time.monotonic() + 60
    while True:
        tree = [p for p in process_tree(pid)
                if b"resource_tracker" not in Path(f"/proc/{p}/cmdline").read_bytes()]  # fmt: skip
        if workers == 1 or time.monotonic() > deadline:
            return tree
        if len(tree) > workers and listening_sockets(port) >= workers:
            return tree
        time.sleep(0.2)


def _wait_up(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx2.get(url, timeout=2)
            return
        except httpx2.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def report(out: dict[str, Any], args: argparse.Namespace) -> None:
    n = args.bursts * args.concurrency
    print(
        f"{args.bursts} bursts of {args.concurrency} concurrent POSTs, {args.workers} web worker(s)"
    )
    print(f"{'':34} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8}")
    for name, label in (
        ("ours", "POST /webhooks/telegram"),
        ("floor", "bare ASGI + one XADD (floor)"),
    ):
        values = out[name]
        rate = n / out[f"{name}_s"]
        print(f"{label:34} {statistics.median(values) * 1000:8.1f} "
              f"{percentile(values, 0.99) * 1000:8.1f} {rate:8.0f}")  # fmt: skip
    ratio = out["floor_s"] / out["ours_s"]
    print(f"throughput, ours / floor: {ratio:.2f} (aim >= 0.5); p99 aim <= 50 ms")
    ours_us, floor_us = (cpu_per_request(out, name) * 1e6 for name in ("ours", "floor"))
    print(f"server CPU per request: ours {ours_us:.0f} us, floor {floor_us:.0f} us "
          f"({ours_us / floor_us:.2f}x)")  # fmt: skip
    if args.workers > 1:  # the parent only supervises: its share is near 0
        shares = [used / out["ours_cpu_s"] for used in out["ours_cpu_by_process_s"]]
        print("our processes' shares of the CPU: " + ", ".join(f"{s:.0%}" for s in shares))
    if args.fresh_bursts:
        report_fresh(out, args)


def report_fresh(out: dict[str, Any], args: argparse.Namespace) -> None:
    """The new-connection bursts: webhooks against `/healthz`, in bursts of one kind
    (alternating) and in mixed bursts."""
    print(f"\n{args.fresh_bursts} rounds of bursts of {args.concurrency} NEW connections "
          f"(Connection: close)")  # fmt: skip
    print(f"{'':44} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    for layout in ("webhook", "healthz", "mixed"):
        for kind in FRESH_LAYOUTS[layout]:
            values = out[f"fresh_{layout}_{kind}"]
            label = f"{'POST /webhooks/telegram' if kind == 'webhook' else 'GET /healthz'}"
            label += ", mixed bursts" if layout == "mixed" else f", bursts of {kind}s"
            print(f"{label:44} {statistics.median(values) * 1000:8.1f} "
                  f"{percentile(values, 0.9) * 1000:8.1f} "
                  f"{percentile(values, 0.99) * 1000:8.1f}")  # fmt: skip
    separate, mixed = fresh_ratios(out)
    by_round = round_ratios(out, args.concurrency)
    print(f"p99 webhook / healthz: {separate:.2f} in bursts of one kind, {mixed:.2f} in mixed "
          f"bursts (aim <= 1.25); per round (a webhook burst against the healthz burst right "
          f"after it): median {statistics.median(by_round):.2f}, "
          f"{sum(r <= 1.25 for r in by_round)} of {len(by_round)} rounds <= 1.25")  # fmt: skip
    for kind, (cpu_us, scripts, calls, redis_us) in fresh_costs(out, args).items():
        print(f"per {kind}: {cpu_us:.0f} us of our CPU; in Redis {scripts:.1f} script calls, "
              f"{calls:.1f} commands, {redis_us:.0f} us of CPU")  # fmt: skip


def fresh_costs(out: dict[str, Any], args: argparse.Namespace) -> dict[str, tuple[float, ...]]:
    """Per kind of request, in the bursts of that kind alone: our processes' CPU µs, the
    script calls, the Redis commands (a script's own included, the call not), and Redis's CPU
    µs (from `INFO cpu`, its networking included)."""
    requests = args.fresh_bursts * args.concurrency
    costs = {}
    for kind in ("webhook", "healthz"):
        totals = out[f"redis_{kind}"]
        scripts = sum(c for name, (c, _) in totals.items() if name in _SCRIPT_CALLS)
        calls = sum(c for name, (c, _) in totals.items() if name not in _NOT_COMMANDS)
        costs[kind] = (
            out[f"cpu_{kind}_s"] * 1e6 / requests, scripts / requests, calls / requests,
            out[f"redis_cpu_{kind}_s"] * 1e6 / requests,
        )  # fmt: skip
    return costs


def round_ratios(out: dict[str, Any], concurrency: int) -> list[float]:
    """Per round, the p99 of its burst of webhooks over the p99 of its burst of `/healthz`
    (sent right after): a ratio that the machine's other work, which drifts over a run,
    moves far less than it moves the run's p99s."""
    webhooks, healthz = out["fresh_webhook_webhook"], out["fresh_healthz_healthz"]
    return [
        percentile(webhooks[i : i + concurrency], 0.99)
        / percentile(healthz[i : i + concurrency], 0.99)
        for i in range(0, len(webhooks), concurrency)
    ]


_SCRIPT_CALLS = {"cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall"}
_NOT_COMMANDS = {"cmdstat_config", "cmdstat_info"} | _SCRIPT_CALLS
"""The benchmark's own CONFIG RESETSTAT and INFO, and script calls (their commands count)."""


def fresh_ratios(out: dict[str, Any]) -> tuple[float, float]:
    """The webhooks' p99 over `/healthz`'s in the new-connection bursts of `out`: in bursts
    of one kind, and in mixed bursts."""
    p99 = {key: percentile(values, 0.99) for key, values in out.items() if key.startswith("fresh_")
           and isinstance(values, list)}  # fmt: skip
    return (
        p99["fresh_webhook_webhook"] / p99["fresh_healthz_healthz"],
        p99["fresh_mixed_webhook"] / p99["fresh_mixed_healthz"],
    )


def cpu_per_request(out: dict[str, Any], name: str) -> float:
    """Seconds of CPU the server `name` ("ours" or "floor") spent per request it served."""
    return float(out[f"{name}_cpu_s"]) / int(out["served"])


if __name__ == "__main__":
    main()
