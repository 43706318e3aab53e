"""`harness web --workers N`: N processes, each accepting on its own socket, so connections
opened together are spread across them; the parent replaces one that dies, stops them all on
SIGTERM, and stops with an error when they cannot listen."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.fleet.embedded_redis import free_port
from tests.integration.conftest import Fleet
from tests.waiting import wait_until

CONNECTIONS = 40


def _children(pid: int) -> list[int]:
    """The pids of `pid`'s live children that serve (not multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z" and b"resource_tracker" not in cmdline:
            found.append(int(entry.name))
    return found


ESTABLISHED, LISTEN = "01", "0A"  # states in /proc/net/tcp


def _inodes(port: int, state: str) -> set[str]:
    """Socket inodes of the local side of TCP sockets on `port` in `state`."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].rsplit(":", 1)[1], 16)
        if local_port == port and fields[3] == state:
            inodes.add(fields[9])
    return inodes


def _sockets_of(pid: int, port: int, state: str = ESTABLISHED) -> int:
    """How many sockets on `port` in `state` the process `pid` holds."""
    server_side = _inodes(port, state)
    held = 0
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except FileNotFoundError:  # the process ended since it was listed
        return 0
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in server_side:
            held += 1
    return held


def _answers(port: int) -> bool:
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code in (200, 503)
    except httpx2.HTTPError:
        return False


@pytest.fixture
def fleet(redis_url: str, tmp_path: Path) -> Iterator[Fleet]:
    started = Fleet(redis_url=redis_url, prefix=f"wp{uuid.uuid4().hex[:8]}", log_dir=tmp_path)
    try:
        yield started
    finally:
        started.stop()


def _start_web(fleet: Fleet, port: int, workers: int = 2) -> subprocess.Popen[bytes]:
    web = fleet.start("web", "web", "--port", str(port), "--host", "127.0.0.1",
                      "--workers", str(workers))  # fmt: skip
    wait_until(lambda: _listening(web.pid, port) == workers and _answers(port),
               what=f"{workers} web processes listening", timeout=60)  # fmt: skip
    return web


def _listening(pid: int, port: int) -> int:
    """How many of `pid`'s children listen on `port`."""
    return sum(1 for child in _children(pid) if _sockets_of(child, port, LISTEN))


def test_connections_opened_together_are_spread_over_the_processes(fleet: Fleet) -> None:
    # Given `harness web --workers 2`
    port = free_port()
    web = _start_web(fleet, port)

    # When 40 clients connect at once and each sends a request on its connection
    clients = [
        socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(CONNECTIONS)
    ]
    try:
        for client in clients:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        for client in clients:
            assert client.recv(4096).startswith(b"HTTP/1.1 "), fleet.logs()

        # Then each process holds a share of them: none idles while the other serves all
        held = [_sockets_of(child, port) for child in _children(web.pid)]
    finally:
        for client in clients:
            client.close()
    assert sum(held) == CONNECTIONS, held
    assert min(held) >= 5, f"connections per process: {held}"


def test_a_process_that_dies_is_replaced_and_sigterm_stops_them_all(fleet: Fleet) -> None:
    # Given two web processes
    port = free_port()
    web = _start_web(fleet, port)
    first, second = _children(web.pid)

    # When one is killed
    os.kill(first, signal.SIGKILL)

    # Then another takes its place and the port keeps answering
    wait_until(lambda: len(set(_children(web.pid)) - {first, second}) == 1
               and _listening(web.pid, port) == 2 and _answers(port),
               what="a new web process listening", timeout=60)  # fmt: skip
    survivors = _children(web.pid)
    assert "web process" in (fleet.log_dir / "web.log").read_text()

    # And when the parent gets SIGTERM, it stops every process and exits 0
    web.send_signal(signal.SIGTERM)
    assert web.wait(timeout=60) == 0, fleet.logs()
    for child in survivors:
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text()


def test_a_port_taken_without_reuse_stops_the_web_with_one_clear_line(fleet: Fleet) -> None:
    # Given the port held by a socket that does not share it
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]

        # When `harness web --workers 2` starts on it
        web = fleet.start("web", "web", "--port", str(port), "--host", "127.0.0.1",
                          "--workers", "2")  # fmt: skip

        # Then it exits 1, saying it cannot listen, instead of restarting forever
        assert web.wait(timeout=60) == 1, fleet.logs()
    log = (fleet.log_dir / "web.log").read_text()
    assert f"cannot listen on 127.0.0.1:{port}" in log, log
    assert "Traceback" not in log, log
