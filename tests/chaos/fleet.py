"""The chaos suite's fleet: real web, worker and scheduler processes (`tests.integration`'s
`Fleet`) on a Redis of their own that may be killed and restarted from its append-only file,
the scripted model server answering every conversation by what it was asked, and the fake
Telegram Bot API receiving the replies.

Every message is a token `c<chat>-m<n>`. The model first calls `bash` to append
`<token> <pid of the worker> <nonce>` to `tool-runs.log` in the workspace (one line per
execution of that tool step, the nonce new each time) and print the same line, then answers
`re <token>`. The model server notes the tool results it is sent (`ToolResultsSeen`): the one
execution whose output the run recorded. The fake platform's messages, that file and those
notes are the evidence the invariant checks (`tests.chaos.invariants`) read.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis

from harness.agent.model_calls import MODEL_SERVICE
from harness.fleet.embedded_redis import EmbeddedRedis, free_port
from harness.runtime import Runtime
from harness.runtime.call_health import calls_waiting
from harness.runtime.keys import Keys
from harness.runtime.presence import live_members
from tests.channels.conftest import TELEGRAM_SECRET
from tests.fakes.model_server import ModelServer, Reply, ScriptedCall
from tests.fakes.telegram_api import FakeTelegramApi
from tests.integration.conftest import Fleet, runtime_for
from tests.waiting import wait_until

TOKEN = re.compile(r"\bc\d+-m\d+\b")
TOOL_LOG = "tool-runs.log"
TOOL_LINE = re.compile(r"\b(c\d+-m\d+) \d+ (\d+)")
"""A line the tool step logs and prints: token, worker pid, nonce (token and nonce captured)."""
MODEL_TIMEOUT_S = 2.0
"""AGENT_MODEL_TIMEOUT of the fleet: a model answer that hangs longer is retried."""
START_TIMEOUT_S = 60.0


@dataclass
class ModelFaults:
    """How often the scripted model misbehaves, per request: 429, 500, or a hang well past
    `MODEL_TIMEOUT_S`, drawn from a seeded generator; and how long a good answer stalls after
    its first streamed event (`latency`: a model takes its time, so runs are caught midway)."""

    latency: float = 0.0
    rate_limited: float = 0.0
    server_error: float = 0.0
    hang: float = 0.0
    seed: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    _rng: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def draw(self) -> Reply | None:
        """A faulty reply for this request, or None to answer normally."""
        with self._lock:
            roll = self._rng.random()
        for kind, rate, reply in (
            ("429", self.rate_limited, Reply.error(429, retry_after=0)),
            ("500", self.server_error, Reply.error(500)),
            ("hang", self.hang, Reply.answer("too late", delay=MODEL_TIMEOUT_S * 15)),
        ):
            if roll < rate:
                with self._lock:
                    self.counts[kind] = self.counts.get(kind, 0) + 1
                return reply
            roll -= rate
        return None


def _texts(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, text) of each block of an Anthropic message: kind is "text" or "tool_result"."""
    content = message.get("content")
    if isinstance(content, str):
        return [("text", content)]
    blocks: list[tuple[str, str]] = []
    for block in content or []:
        kind = str(block.get("type"))
        blocks.append((kind, json.dumps(block.get("text") or block.get("content") or "")))
    return blocks


@dataclass
class ToolResultsSeen:
    """The tool results the model was sent, per token: the nonces of the executions whose
    output a run recorded and went on with (a step's result is sent to the model only after
    it is recorded; a replay sends the recorded one again). Thread-safe."""

    _nonces: dict[str, set[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, text: str) -> None:
        """Note every `<token> <pid> <nonce>` line in a tool result's text."""
        for token, nonce in TOOL_LINE.findall(text):
            with self._lock:
                self._nonces.setdefault(token, set()).add(nonce)

    def nonces(self, token: str) -> set[str]:
        """The nonces of `token`'s tool executions that the model was sent."""
        with self._lock:
            return set(self._nonces.get(token, ()))


def answer_by_token(faults: ModelFaults, seen: ToolResultsSeen) -> Any:
    """A `ModelServer` responder: the turn's token from the newest user text; a `bash` call
    logging it unless the turn already has a tool result, then `re <token>`. Every tool
    result a request carries is noted in `seen` first, even when the request then fails."""

    def respond(api: str, body: Any) -> Reply:
        messages = body.get("messages") or []
        for message in messages:
            for kind, text in _texts(message):
                if kind == "tool_result":
                    seen.note(text)
        faulty = faults.draw()
        if faulty is not None:
            return faulty
        tool_done = False
        for message in reversed(messages):
            if message.get("role") != "user":
                continue
            blocks = _texts(message)
            if any(kind == "tool_result" for kind, _ in blocks):
                tool_done = True
                continue
            found = [t for _, text in blocks for t in TOKEN.findall(text)]
            if found:
                token = found[-1]
                break
        else:
            return Reply.answer("no token in this conversation")
        if tool_done:
            return Reply.answer(f"re {token}", delay=faults.latency)
        line = f'line="{token} $PPID $RANDOM$RANDOM$RANDOM"; '
        command = line + f'echo "$line" >> {TOOL_LOG}; echo "$line"'
        call = ScriptedCall("bash", {"command": command}, id=f"toolu_{token.replace('-', '_')}")
        return Reply.tools(call, delay=faults.latency)

    return respond


@dataclass
class ChaosFleet:
    """Web, workers and a scheduler on `redis`, with the fakes; processes can be killed."""

    redis: EmbeddedRedis
    fleet: Fleet
    telegram: FakeTelegramApi
    model: ModelServer
    faults: ModelFaults
    port: int
    killed_pids: set[int] = field(default_factory=set)
    kill_times: list[float] = field(default_factory=list)
    worker_count: int = 0
    gateway_count: int = 0
    own_gateways: bool = False
    tool_results: ToolResultsSeen = field(default_factory=ToolResultsSeen)

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def workspace(self) -> Path:
        return self.fleet.log_dir / "workspace"

    @property
    def keys(self) -> Keys:
        return Keys(self.fleet.prefix)

    def client(self) -> redis.Redis:
        """A client on the fleet's Redis (decoded strings)."""
        return redis.Redis.from_url(self.redis.url, decode_responses=True)

    def start_web(self, wait: bool = True) -> None:
        """Start the web server; with `wait`, until it answers `/healthz`."""
        self.fleet.start("web", "web", "--port", str(self.port), "--host", "127.0.0.1")
        if wait:
            self.wait_web_ready()

    def wait_web_ready(self) -> None:
        """Until the web server answers `/healthz`."""
        wait_explained(
            lambda: _ready(self.web_url),
            "the web server to be ready",
            self.fleet.logs,
            START_TIMEOUT_S,
        )

    def start_worker(self, name: str | None = None) -> str:
        """Start a worker (a fresh name unless given) and return its name."""
        if name is None:
            name = f"worker{self.worker_count}"
            self.worker_count += 1
        # beside gateway processes, as `harness up` runs it: no gateway, and no replies to post
        gateway = ("--no-gateway", "--queues", "harness") if self.own_gateways else ()
        self.fleet.start(name, "worker", "--concurrency", "4", *gateway)
        return name

    def start_gateway(self) -> str:
        """Start a model gateway process as `harness up` runs it (`harness gateway --deliver`:
        it also posts the replies) and return its name."""
        name = f"gateway{self.gateway_count}"
        self.gateway_count += 1
        self.fleet.start(name, "gateway", "--deliver")
        return name

    def gateways(self) -> list[str]:
        """Names of the gateway processes still running."""
        return [
            name
            for name, proc in self.fleet.procs.items()
            if name.startswith("gateway") and proc.poll() is None
        ]

    def wait_gateways_ready(self, count: int) -> None:
        """Until `count` model gateways beat (`harness.runtime.call_health`)."""
        rt = self.runtime()
        wait_explained(
            lambda: calls_waiting(rt, MODEL_SERVICE).gateways >= count,
            f"{count} model gateways to be up",
            self.fleet.logs,
            START_TIMEOUT_S,
        )

    def workers(self) -> list[str]:
        """Names of the worker processes still running."""
        return [
            name
            for name, proc in self.fleet.procs.items()
            if name.startswith("worker") and proc.poll() is None
        ]

    def runtime(self) -> Runtime:
        """A runtime on the fleet's Redis and key prefix (the ledger, the bus)."""
        return runtime_for(self.fleet)

    def wait_workers_ready(self, count: int) -> None:
        """Until `count` workers beat in the fleet's presence records."""
        rt = self.runtime()
        wait_explained(
            lambda: len(live_members(rt, "worker")) >= count,
            f"{count} workers to be up",
            self.fleet.logs,
            START_TIMEOUT_S,
        )

    def wait_for_kill(self, k: int, kills: int, total: int, rng: random.Random) -> None:
        """Until the `k`-th of `kills` kill points, each at a random place of its share of the
        `total` replies, has been reached."""
        threshold = int(total * (k + rng.random()) / (kills + 1))
        wait_until(
            lambda: len(self.telegram.messages) >= threshold,
            timeout=600,
            what=f"{threshold} replies before kill {k}",
        )

    def signal_worker(self, name: str, sig: signal.Signals) -> int:
        """Send `sig` to the worker's process group; its pid."""
        proc = self.fleet.procs[name]
        os.killpg(proc.pid, sig)
        if sig == signal.SIGKILL:
            self.killed_pids.add(proc.pid)
            self.kill_times.append(time.time())
        return proc.pid

    def runs_held_by(self, pid: int) -> list[str]:
        """Ids of the live runs whose lease the process `pid` holds."""
        return [
            r.id
            for r in self.runtime().ledger.recent(limit=1_000_000)
            if r.status in ("running", "pending") and _held_by(r.owner, pid)
        ]

    def wait_taken_over(self, run_ids: list[str], pid: int, timeout: float = 60) -> float:
        """Until none of `run_ids` is still held by `pid` (another worker took it over, or it
        ended); the seconds that took, for the report."""
        started = time.monotonic()
        ledger = self.runtime().ledger

        def released() -> bool:
            for run_id in run_ids:
                record = ledger.run(run_id)
                if (
                    record is not None
                    and _held_by(record.owner, pid)
                    and (record.status in ("running", "pending"))
                ):
                    return False
            return True

        wait_until(released, timeout=timeout, interval=0.05, what=f"runs of {pid} taken over")
        return time.monotonic() - started

    def kill_redis(self) -> None:
        """SIGKILL the Redis server: no SHUTDOWN, only what its append-only file holds."""
        pid = int(self.client().info("server")["process_id"])
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not self.redis.running(), what="redis-server to die", timeout=10)

    def restart_redis(self) -> None:
        """A new server on the same port and directory, loading the append-only file."""
        self.redis = EmbeddedRedis(self.redis.data_dir, port=self.redis.port, persist=True).start()

    def tool_runs(self) -> list[tuple[str, int, str]]:
        """(token, worker pid, nonce) for each execution of a tool step, in order."""
        path = self.workspace / TOOL_LOG
        if not path.exists():
            return []
        rows = []
        for line in path.read_text().splitlines():
            token, pid, nonce = [*line.split(" "), "", ""][:3]
            rows.append((token, int(pid or 0), nonce))
        return rows


def wait_explained(
    check: Callable[[], object], what: str, explain: Callable[[], str], timeout: float
) -> None:
    """`wait_until`, whose failure adds `explain()` as it is at the deadline (logs, progress)."""
    try:
        wait_until(check, what=what, timeout=timeout, interval=0.2)
    except pytest.fail.Exception as exc:
        pytest.fail(f"{exc}\n{explain()}")


def _kill_all(fleet: Fleet) -> None:
    """SIGKILL every fleet process still running (each leads a process group) and reap it."""
    for proc in fleet.procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    for proc in fleet.procs.values():
        proc.wait()


def _held_by(owner: str, pid: int) -> bool:
    """Whether a lease owner (`host:pid:attempt`) is the process `pid`."""
    parts = owner.rsplit(":", 2)
    return len(parts) == 3 and parts[1] == str(pid)


def _ready(url: str) -> bool:
    try:
        return httpx2.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx2.HTTPError:
        return False


def fleet_env(telegram: FakeTelegramApi, model: ModelServer, port: int) -> dict[str, str]:
    """What the chaos fleet's processes read besides `Fleet.env`."""
    return {
        "PORT": str(port),
        "TELEGRAM_BOT_TOKEN": telegram.token,
        "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        "TELEGRAM_API_BASE_URL": telegram.base_url,
        "TELEGRAM_MODE": "webhook",
        "TELEGRAM_ALLOWED_CHATS": "",
        "DM_POLICY": "open",
        "ON_NEW_MESSAGE": "queue",
        "STREAM_REPLIES": "false",
        "AGENT_APPROVAL": "off",
        "AGENT_SHELL_SANDBOX": "off",
        "ANTHROPIC_API_KEY": model.api_key,
        "ANTHROPIC_BASE_URL": model.url,
        "AGENT_MODEL_TIMEOUT": str(MODEL_TIMEOUT_S),
        "HARNESS_LEASE_TTL": "3",
        "LOG_LEVEL": "INFO",
    }


@contextmanager
def chaos_fleet(
    tmp: Path, workers: int, faults: ModelFaults | None = None, gateways: int = 0, **env: str
) -> Iterator[ChaosFleet]:
    """A started fleet: its own Redis (append-only), web, `workers` workers and a scheduler;
    with `gateways`, that many model gateway processes and workers started `--no-gateway`
    (as `harness up` runs them), else a gateway on a thread of each worker."""
    faults = faults or ModelFaults()
    server = EmbeddedRedis(tmp / "redis", persist=True).start()
    telegram = FakeTelegramApi().start()
    telegram.edit_every = 0.0
    model = ModelServer().start()
    seen = ToolResultsSeen()
    model.respond_with(answer_by_token(faults, seen))
    port = free_port()
    fleet = Fleet(
        redis_url=server.url, prefix=f"ch{uuid.uuid4().hex[:8]}", log_dir=tmp,
        extra_env={**fleet_env(telegram, model, port), **env},
    )  # fmt: skip
    (tmp / "workspace").mkdir()
    chaos = ChaosFleet(
        server, fleet, telegram, model, faults, port, own_gateways=gateways > 0, tool_results=seen
    )
    try:
        # every process starts at once: each spends seconds importing, on cores of its own
        chaos.start_web(wait=False)
        for _ in range(workers):
            chaos.start_worker()
        for _ in range(gateways):
            chaos.start_gateway()
        fleet.start("scheduler", "scheduler")
        chaos.wait_web_ready()
        chaos.wait_workers_ready(workers)
        chaos.wait_gateways_ready(gateways)
        yield chaos
    finally:
        # the scenario has made its checks: no graceful stop to wait for (SIGTERM is a
        # scenario of its own, `test_worker_crashes`)
        _kill_all(fleet)
        model.stop()
        telegram.stop()
        chaos.redis.stop()


def elapsed_since(start: float) -> float:
    """Seconds since `start` (a `time.monotonic()` reading), for figures."""
    return time.monotonic() - start
