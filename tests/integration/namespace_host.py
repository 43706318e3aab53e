"""One "host" for the two-host test: run as `unshare --mount --net --fork python -m
tests.integration.namespace_host PLAN.json` (root), it makes the new namespaces look like
another machine, then runs that host's processes until SIGTERM.

- Mounts: everything private, a fresh tmpfs on `/tmp`, and the plan's `common` folder (the
  shared root and the folder of Redis's UNIX socket: all the hosts share) bound back at its
  own path, since it lies under the old `/tmp`.
- Network: only its own loopback, brought up; Redis is reached through the socket file.
- A scripted model server of its own on that loopback, answering the plan's replies; its
  requests are written to `<logs>/<name>-requests.json` when the host stops.
- `/tmp/host-name` holds the host's name, so a function can say where it ran.
- The plan's processes (`harness.cli` commands) start from `/tmp`, with the plan's
  environment. On SIGTERM they are stopped, then `<logs>/<name>.done` is written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.fakes.model_server import ModelServer, Reply
from tests.processes import stop_groups


def _isolate(common: str) -> None:
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    # What must stay visible after a fresh tmpfs hides the old /tmp: the shared folder, and the
    # code and Python this host runs when they lie under /tmp (a CI clone may).
    kept = [common, *(p for p in _code_folders() if _under_tmp(p))]
    fds = [os.open(path, os.O_PATH | os.O_DIRECTORY) for path in kept]
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/tmp"], check=True)
    for path, fd in zip(kept, fds, strict=True):
        os.makedirs(path, exist_ok=True)
        # mount(8) would resolve the /proc link to the path, now inside the new tmpfs
        bind = ["mount", "--no-canonicalize", "--bind", f"/proc/{os.getpid()}/fd/{fd}", path]
        subprocess.run(bind, check=True)
        os.close(fd)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def _code_folders() -> list[str]:
    """The repository (tests and sources) and the Python environment, as real paths."""
    repo = Path(__file__).resolve().parents[2]
    return sorted({str(repo), os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)})


def _under_tmp(path: str) -> bool:
    return path == "/tmp" or path.startswith("/tmp/")


def _reply(spec: dict[str, Any]) -> Reply:
    if "answer" in spec:
        return Reply.answer(spec["answer"])
    return Reply.tool(spec["tool"], spec["arguments"])


def _start(log_file: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log_file.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.cli", *args],
            cwd="/tmp", env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def main(plan_file: str) -> None:
    plan = json.loads(Path(plan_file).read_text())
    name, logs = plan["name"], Path(plan["logs"])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    _isolate(plan["common"])
    Path("/tmp/host-name").write_text(name)
    server = ModelServer().start()
    server.script(*(_reply(spec) for spec in plan["replies"]))
    env = {**plan["env"], "ANTHROPIC_API_KEY": server.api_key, "ANTHROPIC_BASE_URL": server.url}
    procs = [_start(logs / f"{name}-{process}.log", args, env) for process, args in
             plan["processes"].items()]  # fmt: skip
    stop.wait()
    stop_groups(procs, timeout=20)
    bodies = [request.body for request in server.requests]
    server.stop()
    (logs / f"{name}-requests.json").write_text(json.dumps(bodies))
    (logs / f"{name}.done").write_text("stopped\n")


if __name__ == "__main__":
    main(sys.argv[1])
