"""Two hosts, one conversation: each "host" is its own mount and network namespace (its own
`/tmp`, loopback, model server and processes: `namespace_host.py`); they share only Redis,
reached over a UNIX socket, and `HARNESS_SHARED_ROOT`.

The turns of one conversation land alternately on host A's and host B's worker (only one
host's worker runs at a time); host B also runs the scheduler and the sidecar, watching
functions/ by polling (`SIDECAR_WATCH=poll`). Checked: the transcript holds every turn in
order, a memory note written on A is in the prompt B's model receives, and a function the
agent wrote on A is loaded by B's sidecar and runs there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from harness.agent.session import SessionLine, SessionStore
from harness.chat_client import ChatError, ChatSession
from harness.fleet.embedded_redis import find_redis_server
from harness.runtime import Runtime, publish
from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.keys import Keys
from tests.integration.conftest import ROOT
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

NOTE = "Ana's sister is called Ada."
WHERE = """\
from pathlib import Path

from harness.runtime import event, function


@function(id="where", trigger=event("test/where"))
def where(ctx):
    return Path("/tmp/host-name").read_text()
"""
UNSHARE = ("unshare", "--mount", "--net", "--fork", "--kill-child=SIGTERM")
LAUNCHER = "tests.integration.namespace_host"
START_S = 90.0  # a host starts Python, Celery and (on B) the sidecar's child on 2 busy cores


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--net", "--fork", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0


@dataclass
class Hosts:
    """The shared folder (`common`: the shared root and Redis's socket) and the hosts."""

    common: Path
    prefix: str = field(default_factory=lambda: f"two{uuid.uuid4().hex[:8]}")
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.common / "root"

    @property
    def logs(self) -> Path:
        return self.common / "logs"

    @property
    def url(self) -> str:
        return f"unix://{self.common / 'bus' / 'redis.sock'}"

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTEST", "REDIS_", "HARNESS_", "AGENT_", "SIDECAR_"))
        }
        env.update(
            PYTHONPATH=str(ROOT), REDIS_URL=self.url, HARNESS_KEY_PREFIX=self.prefix,
            HARNESS_SHARED_ROOT=str(self.root), AGENT_APPROVAL="off", SIDECAR_WATCH="poll",
            SIDECAR_SANDBOX="off", SIDECAR_DEBOUNCE="0.3", HARNESS_LEASE_TTL="2",
            HARNESS_REAPER_INTERVAL="0.2", HARNESS_RETRY_BACKOFF="0.1", LOG_LEVEL="INFO",
        )  # fmt: skip
        return env

    def start(
        self, name: str, processes: dict[str, list[str]], replies: list[dict[str, Any]]
    ) -> None:
        plan = {
            "name": name, "common": str(self.common), "logs": str(self.logs), "env": self.env(),
            "processes": processes, "replies": replies,
        }  # fmt: skip
        plan_file = self.logs / f"{name}-plan.json"
        plan_file.write_text(json.dumps(plan))
        command = [*UNSHARE, sys.executable, "-m", LAUNCHER, str(plan_file)]
        with (self.logs / f"{name}-host.log").open("wb") as log:
            self.running[name] = subprocess.Popen(
                command, cwd=ROOT, env={**self.env(), "PYTHONPATH": str(ROOT)},
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def stop(self, name: str) -> list[dict[str, Any]]:
        """Stop host `name` and return the request bodies its model server received."""
        proc = self.running.pop(name)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        wait_until(
            lambda: (self.logs / f"{name}.done").exists(),
            timeout=60,
            what=f"host {name} to stop\n{self.logs_text()}",
        )
        proc.wait(timeout=30)
        requests: list[dict[str, Any]] = json.loads(
            (self.logs / f"{name}-requests.json").read_text()
        )
        return requests

    def logs_text(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.logs.glob("*.log"))
        )


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    """A Redis on a UNIX socket in the shared folder, and no host running yet."""
    if not _namespaces_work():
        pytest.skip("needs root (or user namespaces), `unshare` and `ip`")
    common = tmp_path / "common"
    for folder in ("root", "bus", "logs"):
        (common / folder).mkdir(parents=True)
    made = Hosts(common=common)
    socket = common / "bus" / "redis.sock"
    server = subprocess.Popen(
        [find_redis_server(), "--port", "0", "--unixsocket", str(socket),
         "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
         "--dir", str(common / "bus")],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        client = redis.Redis.from_url(made.url)
        wait_until(lambda: socket.exists() and client.ping(), timeout=30, what="Redis")
        yield made
    except BaseException:
        print(made.logs_text())
        raise
    finally:
        for name in list(made.running):
            made.stop(name)
        server.terminate()
        server.wait(timeout=20)


def _runtime(hosts: Hosts) -> Runtime:
    configure(hosts.url)
    client = redis.Redis.from_url(hosts.url, decode_responses=True)
    return Runtime(
        redis=client, kicker=CeleryKicker(in_script=True), keys=Keys(hosts.prefix), lease_ttl=2.0
    )


def _texts(body: dict[str, Any]) -> str:
    return json.dumps(body)


WORKER = ["worker", "--concurrency", "2"]


def _ask(chat: ChatSession, hosts: Hosts, text: str) -> str:
    """The reply to `text`; a failure carries every host's logs."""
    try:
        return chat.ask(text).response
    except ChatError as exc:
        raise AssertionError(f"{text!r}: {exc}\n{hosts.logs_text()}") from exc


def test_two_hosts_share_one_conversation_its_memory_and_its_functions(hosts: Hosts) -> None:
    runtime = _runtime(hosts)
    chat = ChatSession(runtime, timeout=START_S)
    # Given host A's worker, whose model remembers a note and writes a function
    hosts.start(
        "a",
        {"worker": WORKER},
        [
            {"tool": "remember", "arguments": {"note": NOTE}},
            {"tool": "write", "arguments": {"path": "functions/where.py", "content": WHERE}},
            {"answer": "Noted, and where.py is written."},
        ],
    )
    wait_until(
        lambda: runtime.redis.hexists(runtime.keys.functions, "agent-handle-message"),
        timeout=START_S,
        what=f"host A's worker to register the agent's functions\n{hosts.logs_text()}",
    )
    # When the first turn is sent, it is answered on host A
    first = _ask(chat, hosts, "My sister is Ada; write where.py")
    assert first == "Noted, and where.py is written."
    hosts.stop("a")
    # And host B (worker, scheduler, sidecar polling functions/) answers the second
    hosts.start(
        "b",
        {"worker": WORKER, "scheduler": ["scheduler"], "sidecar": ["sidecar"]},
        [{"answer": "Your sister is Ada."}],
    )
    assert _ask(chat, hosts, "Who is my sister?") == "Your sister is Ada."
    # Then B's sidecar loaded the function A's agent wrote, and it runs on B
    wait_until(
        lambda: "where" in {spec.id for spec in runtime.triggers.specs()},
        timeout=START_S,
        what=f"host B's sidecar to load where.py\n{hosts.logs_text()}",
    )
    run_id = publish({"name": "test/where", "data": {}}, runtime=runtime).run_ids[0]
    done = wait_until(
        lambda: (run := runtime.ledger.run(run_id)) is not None and run.status == "completed"
        and run,
        timeout=START_S,
        what=f"the where run to complete\n{hosts.logs_text()}",
    )  # fmt: skip
    assert done.result == "b", done
    requests_b = hosts.stop("b")
    # And the third turn is answered on host A again
    hosts.start("a2", {"worker": WORKER}, [{"answer": "Third turn, back on A."}])
    assert _ask(chat, hosts, "And now?") == "Third turn, back on A."
    hosts.stop("a2")
    # Then B's model saw the note A remembered and A's turn
    assert len(requests_b) == 1, requests_b
    assert NOTE in _texts(requests_b[0]), "host B's prompt lacks the note written on host A"
    assert "Noted, and where.py is written." in _texts(requests_b[0])
    # And the shared transcript holds every turn, in order
    lines = SessionStore(hosts.root / "state").load(chat.session_key)
    said = [
        (line.message.role, line.message.text)
        for line in lines
        if isinstance(line, SessionLine) and line.message.text and not line.message.tool_calls
    ]
    assert said == [
        ("user", "My sister is Ada; write where.py"),
        ("assistant", "Noted, and where.py is written."),
        ("user", "Who is my sister?"),
        ("assistant", "Your sister is Ada."),
        ("user", "And now?"),
        ("assistant", "Third turn, back on A."),
    ], said
