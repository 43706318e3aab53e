"""Several web server processes on one port, each accepting on its own socket (SO_REUSEPORT).

uvicorn's own `workers` option binds one listening socket and shares it among its processes.
Whichever process wakes first accepts every connection then pending, so a burst of new
connections (a platform opening its pool of keep-alive connections) lands on one process
while the others idle: measured with 100 connections and 2 processes, one took four fifths of
the load. Here each process binds the port itself with SO_REUSEPORT, and the kernel spreads
new connections across the processes' sockets by a hash of their addresses (what nginx's
`reuseport` does).

The parent only supervises: on SIGINT or SIGTERM it sends SIGTERM to the processes (each
stops gracefully, finishing its requests; a second SIGINT would make uvicorn drop them), it
starts a new process for one that exits, and it stops everything when one fails at startup
(uvicorn's exit code for that), since every new one would fail the same way.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import threading
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from harness.fleet.restarts import run_with_restarts
from harness.observe.json_logs import configure_logging
from harness.settings import get_settings

log = logging.getLogger(__name__)

_SPAWN = multiprocessing.get_context("spawn")
_JOIN_SECONDS = 30.0


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A TCP socket bound to `host`:`port` with SO_REUSEPORT (and SO_REUSEADDR), listening.
    Raises OSError when the port is taken by a socket without SO_REUSEPORT, or where the
    platform has no SO_REUSEPORT (Windows: run one web process there)."""
    if not hasattr(socket, "SO_REUSEPORT"):
        raise OSError("SO_REUSEPORT is not available on this platform; run one web process")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def serve_processes(app: str, workers: int, options: dict[str, Any]) -> int:
    """Run `workers` processes, each serving the app factory named `app` ("module:function")
    with uvicorn `options` (host, port, ...) on its own SO_REUSEPORT socket, until SIGINT or
    SIGTERM. A process that exits is started again, with `harness.fleet.restarts`' backoff and one
    log line. Blocks; returns 0 after a requested stop, 1 when a process failed to start."""
    stop = threading.Event()
    failed = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    def keep_one(slot: int) -> None:
        run_with_restarts(lambda: _serve_until(app, options, stop, failed), stop,
                          f"web process {slot + 1} of {workers}")  # fmt: skip

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    slots = [threading.Thread(target=keep_one, args=(i,), daemon=True) for i in range(workers)]
    try:
        for slot in slots:
            slot.start()
        while not stop.wait(0.5):
            pass
    finally:
        stop.set()
        for slot in slots:
            slot.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 1 if failed.is_set() else 0


def _serve_until(
    app: str, options: dict[str, Any], stop: threading.Event, failed: threading.Event
) -> None:
    """Start one process and watch it until `stop` (then SIGTERM it and wait for it to finish
    its requests). Raises when it exited on its own, for `run_with_restarts` to start another;
    a failure at startup instead sets `failed` and `stop`."""
    process = _SPAWN.Process(target=_serve_one, args=(app, options))
    process.start()
    while process.is_alive() and not stop.wait(0.2):
        pass
    if not process.is_alive() and process.exitcode == 0 and stop.wait(1.0):
        return  # stopped by the same Ctrl-C as the parent, a moment before it
    if process.is_alive():
        _terminate(process)
        process.join(_JOIN_SECONDS)
        if process.is_alive():
            process.kill()
        process.join()
        return
    if process.exitcode == STARTUP_FAILURE:
        log.error("web process %s failed to start; stopping", process.pid)
        failed.set()
        stop.set()
        return
    raise RuntimeError(f"process {process.pid} exited with code {process.exitcode}")


def _terminate(process: BaseProcess) -> None:
    if process.pid is None:
        return
    try:
        os.kill(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def _serve_one(app: str, options: dict[str, Any]) -> None:
    """One process: load the app, then bind its own socket and serve until signalled. The
    socket is bound only once the app is loaded: connections the kernel hands a socket
    nobody accepts on yet would wait for the whole import."""
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)  # a spawned process starts bare
    config = uvicorn.Config(app, factory=True, **options)
    config.load()
    try:
        sock = listening_socket(config.host, config.port, config.backlog)
    except OSError as exc:
        log.error("cannot listen on %s:%s: %s", config.host, config.port, exc)
        raise SystemExit(STARTUP_FAILURE) from None
    uvicorn.Server(config).run(sockets=[sock])
