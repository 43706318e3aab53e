"""Benchmark of the channel path on a real Redis, a real web server and a real worker.

Prints, in one run, on loopback:
  * webhook response time (median, p99) of `POST /webhooks/telegram` under concurrent load,
    against the same server's `GET /healthz` (one Redis PING) as the HTTP floor;
  * end-to-end turns per second, from the first webhook of a round to the last `sendMessage`
    recorded by a fake Telegram API, with the scripted model answering at once, against the
    throughput of a plain Celery no-op task on the same worker and Redis (the floor);
  * one turn at a time: webhook -> recorded `sendMessage`, against a Celery no-op round trip;
  * the wire floor (`bench.wire`): the CPU of the calls a turn must make, alone;
and the ratios, with the workers' CPU time per turn and per Celery no-op (from `/proc`): a
worker bound by its CPU meets the aim when a turn costs at most 2 x kicks no-ops' worth of
it. The web server (uvicorn) and a `harness worker` + `harness scheduler` run as
subprocesses; the fake Telegram API and the scripted model server run in this process.

The aim for turns per second: at least half the Celery floor divided by the kicks (Celery
tasks) a turn needs, counted from the runtime's kick counters during the load.

The load runs in `rounds`, each followed by as many Celery no-ops as it sent kicks, so the
floor is measured on the same machine state as the load next to it; the ratio is given per
round and as the median. The fleet runs with DM_POLICY=open, so every turn is served (calls
the model, writes the session); under the default pairing policy each would be a stranger's
pairing-code reply.

Usage: python -m bench.webhooks [--requests 400] [--clients 8] [--serial 30] [--workers 1]
       [--rounds 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import redis

from bench.stats import cpu_seconds, percentile
from bench.wire import WARM_UP, wire_floor
from harness.fleet.embedded_redis import EmbeddedRedis, free_port
from harness.runtime.celery_app import app as celery_app
from harness.runtime.celery_app import configure
from harness.runtime.keys import Keys
from tests.channels.payloads import tg_private_text
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "benchwh"
SECRET = "bench-secret"
WORKER_FUNCTIONS = "channels.handlers,bench.functions"
WIRE_CALLS = 50  # calls of each kind in the wire floor (bench.wire)


class RecordingTelegram(FakeTelegramApi):
    """The fake Bot API, noting when each message was sent (this process's perf_counter)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = threading.Condition()
        self.sent_at: list[float] = []

    def _m_sendMessage(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        result = super()._m_sendMessage(params)
        with self.sent:
            self.sent_at.append(time.perf_counter())
            self.sent.notify_all()
        return result

    def wait_for_messages(self, count: int, timeout: float = 60.0) -> float:
        """Block until `count` messages were sent; return when the last of them was."""
        with self.sent:
            if not self.sent.wait_for(lambda: len(self.sent_at) >= count, timeout):
                raise RuntimeError(f"only {len(self.sent_at)} of {count} replies within {timeout}s")
            return self.sent_at[count - 1]


def _wait(check: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (httpx2.HTTPError, redis.RedisError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


@contextmanager
def fleet(env: dict[str, str], port: int, log_dir: Path, workers: int = 1) -> Iterator[list[int]]:
    """The web server, `workers` workers and a scheduler, stopped on exit; yields the
    workers' pids."""
    python = sys.executable
    worker = [python, "-m", "harness.cli", "worker", "--functions", WORKER_FUNCTIONS,
              "--concurrency", "8"]  # fmt: skip
    commands = {
        "web": [python, "-m", "bench.webhooks", "--serve", "--port", str(port)],
        **{f"worker{n}": worker for n in range(workers)},
        "scheduler": [python, "-m", "harness.cli", "scheduler"],
    }
    procs = []
    try:
        for name, command in commands.items():
            with (log_dir / f"{name}.log").open("wb") as log:
                procs.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log))
        yield [proc.pid for name, proc in zip(commands, procs, strict=True) if "worker" in name]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _post_update(client: httpx2.Client, url: str, update_id: int) -> float:
    update = tg_private_text(update_id=update_id, text=f"ping {update_id}")
    chat = 10_000_000 + update_id  # one chat per turn: no turn waits for another's session
    update["message"]["chat"]["id"] = update["message"]["from"]["id"] = chat
    started = time.perf_counter()
    response = client.post(url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
    elapsed = time.perf_counter() - started
    if response.status_code != 200 or "event_id" not in response.json():
        raise RuntimeError(f"webhook answered {response.status_code}: {response.text}")
    return elapsed


def _offset(
    one: Callable[[httpx2.Client, int], tuple[str, float]], base: int, client: httpx2.Client, i: int
) -> tuple[str, float]:
    """`one(client, base + i)`: the calls of a round numbered from its own base."""
    return one(client, base + i)


def _load(
    clients: int, count: int, one: Callable[[httpx2.Client, int], tuple[str, float]]
) -> list[tuple[str, float]]:
    """`count` calls of `one(client, i)` from `clients` threads, each with its own client."""
    local = threading.local()

    def call(i: int) -> tuple[str, float]:
        if not hasattr(local, "client"):
            local.client = httpx2.Client(timeout=30)
        return one(local.client, i)

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(call, range(count)))


def _kicks_sent(client: redis.Redis) -> int:
    """Kicks sent so far, over every queue (each queue numbers its kicks)."""
    keys = list(client.scan_iter(f"{PREFIX}:kick:sent:*"))
    return sum(int(v or 0) for v in client.mget(keys)) if keys else 0


def measure(
    args: argparse.Namespace,
    base: str,
    telegram: RecordingTelegram,
    model: ModelServer,
    store: redis.Redis,
    workers: list[int],
) -> dict[str, Any]:
    webhook = f"{base}/webhooks/telegram"
    # warm up every path: the web app, the worker's imports, the agent, the fake servers
    with httpx2.Client(timeout=30) as client:
        for i in range(10):
            _post_update(client, webhook, 1 + i)
            telegram.wait_for_messages(i + 1)
    done = 10

    # 1. under load: each client alternates a webhook (a turn the fleet then answers) and a
    #    health check (the HTTP floor), so both see the same load on the same two processes
    def one(client: httpx2.Client, i: int) -> tuple[str, float]:
        if i % 2:
            return "health", _timed_get(client, f"{base}/healthz")
        return "hook", _post_update(client, webhook, i)

    # 2. rounds alternating our load with the Celery floor's, so both see the same machine
    per_round = args.requests // args.rounds
    hook: list[float] = []
    health: list[float] = []
    rounds: list[dict[str, float]] = []
    for r in range(args.rounds):
        kicks_before = _kicks_sent(store)
        cpu_before = cpu_seconds(workers)
        first_sent = time.perf_counter()
        base_id = 1000 + 2 * per_round * r
        timings = _load(args.clients, 2 * per_round, functools.partial(_offset, one, base_id))
        last_reply = telegram.wait_for_messages(done + per_round, timeout=120)
        done += per_round
        kicks = _kicks_sent(store) - kicks_before
        hook += [elapsed for kind, elapsed in timings if kind == "hook"]
        health += [elapsed for kind, elapsed in timings if kind == "health"]
        cpu_turns = cpu_seconds(workers) - cpu_before
        floor_per_s = celery_floor_round(store, args, tasks=kicks, tag=f"load{r}")
        cpu_floor = cpu_seconds(workers) - cpu_before - cpu_turns
        rounds.append({
            "turns_per_s": per_round / (last_reply - first_sent),
            "kicks_per_turn": kicks / per_round, "floor_per_s": floor_per_s,
            "worker_cpu_ms_per_turn": 1000 * cpu_turns / per_round,
            "worker_cpu_ms_per_noop": 1000 * cpu_floor / kicks,
        })  # fmt: skip
    # 3. one turn at a time, counting the Redis commands they make
    serial: list[float] = []
    commands_before = redis_commands(store)
    with httpx2.Client(timeout=30) as client:
        for i in range(args.serial):
            started = time.perf_counter()
            _post_update(client, webhook, 100_000 + i)
            serial.append(telegram.wait_for_messages(done + i + 1) - started)
    per_turn = commands_per_turn(commands_before, redis_commands(store), args.serial)
    # 4. the wire floor: the calls every turn makes, alone, from this thread (bench.wire)
    wire = wire_floor(model, telegram, WIRE_CALLS)
    return {"hook": hook, "health": health, "rounds": rounds, "serial": serial, "wire": wire,
            "redis_per_turn": per_turn}  # fmt: skip


def redis_commands(store: redis.Redis) -> dict[str, int]:
    """Calls so far of each Redis command, from `INFO commandstats` (the whole server)."""
    stats = store.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def commands_per_turn(
    before: dict[str, int], after: dict[str, int], turns: int
) -> dict[str, float]:
    """Each command's calls per turn between two `redis_commands` readings, largest first.
    The serial turns run alone, so the difference is theirs, with the workers' idle polling
    (BRPOP) and the scheduler's passes over the same seconds."""
    counts = {name: (after[name] - before.get(name, 0)) / turns for name in after}
    return dict(sorted(((n, c) for n, c in counts.items() if c > 0), key=lambda nc: -nc[1]))


def _timed_get(client: httpx2.Client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}")
    return time.perf_counter() - started


def celery_floor_round(store: redis.Redis, args: argparse.Namespace, tasks: int, tag: str) -> float:
    """Celery no-op tasks per second: `tasks` of `bench.noop` sent from `clients` threads,
    until the last has started."""
    started = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        list(
            pool.map(
                lambda _: celery_app.send_task("bench.noop", args=[tag], queue="harness"),
                range(tasks),
            )
        )
    _wait(lambda: int(store.llen(f"bench:started:{tag}")) >= tasks, "the Celery floor")
    return tasks / (time.perf_counter() - started)


def celery_serial(store: redis.Redis, args: argparse.Namespace) -> list[float]:
    """`serial` Celery no-op round trips, one at a time: send_task to its first line."""
    serial = []
    for i in range(args.serial):
        t0 = time.perf_counter()
        celery_app.send_task("bench.noop", args=[f"s{i}"], queue="harness")
        if store.blpop([f"bench:started:s{i}"], timeout=30) is None:
            raise RuntimeError("a Celery no-op did not run within 30 s")
        serial.append(time.perf_counter() - t0)
    return serial


def warm_celery(store: redis.Redis) -> None:
    """A few no-ops through the worker first, so the floor's first round is not a cold one."""
    for i in range(10):
        celery_app.send_task("bench.noop", args=[f"warm{i}"], queue="harness")
        store.blpop([f"bench:started:warm{i}"], timeout=30)


def report(ours: dict[str, Any], floor_serial: list[float], args: argparse.Namespace) -> None:
    ms = 1000.0
    print(f"{args.requests} webhooks from {args.clients} clients in {args.rounds} rounds, each")
    print(f"followed by the Celery floor; {args.serial} serial turns; {args.workers} worker(s)\n")
    print(f"{'measure':44} {'median ms':>10} {'p99 ms':>10}")
    rows = [
        ("POST /webhooks/telegram, under load", ours["hook"]),
        ("GET /healthz, under load (HTTP floor)", ours["health"]),
        ("turn: webhook -> sendMessage, serial", ours["serial"]),
        ("Celery no-op round trip, serial (floor)", floor_serial),
    ]
    for name, values in rows:
        median, p99 = statistics.median(values) * ms, percentile(values, 0.99) * ms
        print(f"{name:44} {median:10.2f} {p99:10.2f}")
    print()
    print(
        f"{'round':>5} {'turns/s':>8} {'kicks/turn':>10} {'floor tasks/s':>13} {'ratio':>6} "
        f"{'cpu ms/turn':>11} {'cpu ms/no-op':>12} {'no-ops/turn':>11}"
    )
    ratios, costs = [], []
    for n, r in enumerate(ours["rounds"]):
        # turns per second against the floor divided by the Celery tasks a turn needs
        ratio = r["turns_per_s"] / (r["floor_per_s"] / r["kicks_per_turn"])
        ratios.append(ratio)
        # the workers' CPU for one turn, in Celery no-ops' worth of it
        cost = r["worker_cpu_ms_per_turn"] / r["worker_cpu_ms_per_noop"]
        costs.append(cost)
        print(
            f"{n:5} {r['turns_per_s']:8.1f} {r['kicks_per_turn']:10.2f} "
            f"{r['floor_per_s']:13.1f} {ratio:6.2f} {r['worker_cpu_ms_per_turn']:11.1f} "
            f"{r['worker_cpu_ms_per_noop']:12.2f} {cost:11.1f}"
        )
    print()
    hook, health = ours["hook"], ours["health"]
    print(f"webhook / healthz, median: {statistics.median(hook) / statistics.median(health):.2f}x")
    print(f"webhook / healthz, p99:    {percentile(hook, 0.99) / percentile(health, 0.99):.2f}x")
    serial_ratio = statistics.median(ours["serial"]) / statistics.median(floor_serial)
    print(f"serial turn / Celery round trip, median: {serial_ratio:.1f}x")
    print(
        f"turns per second / (Celery floor / kicks per turn), median of rounds: "
        f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}; "
        f"aim >= 0.5), {args.workers} worker(s)"
    )
    kicks = statistics.median(r["kicks_per_turn"] for r in ours["rounds"])
    print(
        f"workers' CPU per turn, median of rounds: {statistics.median(costs):.1f} Celery no-ops' "
        f"worth (a CPU-bound worker meets the aim at <= 2 x kicks per turn = {2 * kicks:.0f})"
    )
    report_wire(ours)
    per_turn = ours["redis_per_turn"]
    top = ", ".join(f"{name} {calls:.1f}" for name, calls in list(per_turn.items())[:8])
    print(f"Redis commands per serial turn: {sum(per_turn.values()):.1f} ({top})")


def wire_summary(ours: dict[str, Any]) -> dict[str, float]:
    """The turn's CPU against its wire floor (`bench.wire`): the model call and the three Bot
    API calls a turn makes, plus its kicks' worth of Celery no-ops (medians of the rounds).
    Keys: `calls_ms`, `noop_ms`, `kicks`, `floor_ms`, `turn_ms`, `turn_over_floor`,
    `budget_ms` (the aim's 2 x kicks no-ops) and `budget_over_floor`."""
    rounds = ours["rounds"]
    kicks = statistics.median(r["kicks_per_turn"] for r in rounds)
    noop = statistics.median(r["worker_cpu_ms_per_noop"] for r in rounds)
    turn = statistics.median(r["worker_cpu_ms_per_turn"] for r in rounds)
    calls = sum(ours["wire"].values())
    floor, budget = calls + kicks * noop, 2 * kicks * noop
    return {
        "calls_ms": calls, "noop_ms": noop, "kicks": kicks, "floor_ms": floor,
        "turn_ms": turn, "turn_over_floor": turn / floor,
        "budget_ms": budget, "budget_over_floor": budget / floor,
    }  # fmt: skip


def report_wire(ours: dict[str, Any]) -> None:
    """Print `wire_summary` and what each call of the floor cost."""
    w = wire_summary(ours)
    parts = ", ".join(f"{name} {ms:.2f}" for name, ms in ours["wire"].items())
    print(
        f"wire floor of a turn: calls {w['calls_ms']:.1f} ms ({parts}) + {w['kicks']:.0f} kicks "
        f"x {w['noop_ms']:.2f} ms = {w['floor_ms']:.1f} ms CPU, "
        f"{w['floor_ms'] / w['noop_ms']:.1f} Celery no-ops' worth"
    )
    print(
        f"workers' CPU per turn / wire floor: {w['turn_over_floor']:.2f}x ({w['turn_ms']:.1f} "
        f"ms); the aim's budget (2 x kicks no-ops, {w['budget_ms']:.1f} ms) is "
        f"{w['budget_over_floor']:.2f}x the wire floor"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--serial", type=int, default=30)
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port)
        return
    turns = 10 + args.requests + args.serial
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedRedis(Path(tmp) / "redis", persist=False) as server,
        RecordingTelegram() as telegram,
        ModelServer() as model,
    ):
        model.script(*[Reply.answer("pong") for _ in range(turns * 2 + WIRE_CALLS + WARM_UP)])
        port = free_port()
        env = _environment(server.url, telegram, model, Path(tmp), port)
        with fleet(env, port, Path(tmp), args.workers) as workers:
            base = f"http://127.0.0.1:{port}"
            client = redis.Redis.from_url(server.url, decode_responses=True)
            _wait(lambda: httpx2.get(f"{base}/healthz").status_code == 200, "the web server")
            _wait(lambda: client.hexists(Keys(PREFIX).functions, "send-reply"), "the worker")
            _wait(lambda: _workers(client) >= args.workers, "every worker")
            configure(server.url)
            warm_celery(client)
            ours = measure(args, base, telegram, model, client, workers)
            floor_serial = celery_serial(client, args)
    report(ours, floor_serial, args)
    if args.json:
        rounds = ours["rounds"]
        summary = {
            "turns_per_s": statistics.median(r["turns_per_s"] for r in rounds),
            "floor": {"tasks_per_s": statistics.median(r["floor_per_s"] for r in rounds)},
            "wire_floor": wire_summary(ours),
        }
        args.json.write_text(
            json.dumps({"workers": args.workers, **ours, **summary, "floor_serial": floor_serial})
        )


def _workers(client: redis.Redis) -> int:
    """Workers that announced themselves (`harness.runtime.presence`)."""
    infos = client.hvals(Keys(PREFIX).presence_info)
    return sum(json.loads(info).get("role") == "worker" for info in infos)


def _environment(
    url: str, telegram: FakeTelegramApi, model: ModelServer, tmp: Path, port: int
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "TELEGRAM_"))}
    env.update(
        REDIS_URL=url,
        HARNESS_KEY_PREFIX=PREFIX,
        HARNESS_FUNCTION_MODULES="",
        HARNESS_FORBID_REAL_MODELS="1",
        LOG_LEVEL="WARNING",
        PORT=str(port),
        AGENT_WORKSPACE=str(tmp / "workspace"),
        ANTHROPIC_API_KEY=model.api_key,
        ANTHROPIC_BASE_URL=model.url,
        LLM_PROVIDER="anthropic",
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_WEBHOOK_SECRET=SECRET,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_MODE="webhook",
        DM_POLICY="open",  # every turn is served: a stranger would get a pairing code instead
    )
    return env


def serve(port: int) -> None:
    """The web app with the webhook routes, on 127.0.0.1 (the benchmark's subprocess)."""
    import uvicorn

    from harness.web import create_app
    from harness.web.webhooks import router

    uvicorn.run(
        create_app(routers=[router]),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
