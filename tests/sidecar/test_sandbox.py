"""The function host in each OS sandbox this machine can run (bubblewrap, Landlock): it imports
the harness and writes in the workspace, but reads no credential of the project, the state
folder or another process, and gets the network the agent's shell gets."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.settings import Settings
from harness.sidecar.environment import function_environment
from harness.sidecar.executor import HOST_MODULE
from harness.sidecar.host_link import HostLink
from harness.sidecar.sandbox import FunctionSandbox, confined_python
from harness.sidecar.wire import Execute, Load, Outcome
from harness.tools.sandbox import SandboxSetting, ShellPolicy, sandbox_mode, unavailable_reason

CANARY = "sidecar-canary-7f3a9c1e"


@pytest.fixture(params=["bwrap", "landlock"])
def mode(request: pytest.FixtureRequest) -> SandboxSetting:
    """Each sidecar sandbox mode that can run here."""
    setting: SandboxSetting = request.param
    if sandbox_mode(setting) != setting:
        pytest.skip(f"{setting} cannot run here: {unavailable_reason(ShellPolicy(setting))}")
    return setting


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder as `harness up` leaves it: a `.env` and a state folder holding the
    canary, and the workspace beside them."""
    (tmp_path / ".env").write_text(f"REDIS_URL=redis://:{CANARY}@localhost:6379/0\n")
    state = tmp_path / ".harness" / "redis"
    state.mkdir(parents=True)
    (state / "password").write_text(CANARY)
    (tmp_path / "workspace" / "functions").mkdir(parents=True)
    return tmp_path


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[bytes]]:
    """Another process of the fleet's user with the canary in its environment."""
    proc = subprocess.Popen(["sleep", "600"], env={"REDIS_PASSWORD": CANARY})
    yield proc
    proc.kill()
    proc.wait()


def _host(workspace: Path, sandbox: FunctionSandbox, source: str) -> HostLink:
    """A started host in `sandbox` that has loaded `functions/probe.py` = `source`."""
    folder = workspace / "functions"
    (folder / "probe.py").write_text(textwrap.dedent(source))
    settings = Settings(_env_file=None, agent_workspace=workspace)  # type: ignore[call-arg]
    argv = confined_python(HOST_MODULE, [str(folder)], workspace, sandbox)
    env = function_environment(settings, os.environ)
    link = HostLink(argv, env, folder, on_broken=lambda why: None)
    link.start()
    loaded = link.load(Load(reserved=[], skip=[]))
    assert [spec.id for spec in loaded.specs] == ["probe"], loaded.report
    return link


def _execute(link: HostLink, data: dict[str, Any]) -> Any:
    """Run `probe` once in the host; what it returned."""
    process, exec_id = link.channel()
    with process.inbox(exec_id) as inbox:
        event = {"name": "test/probe", "data": data, "id": uuid.uuid4().hex, "ts": 0}
        process.send(
            Execute(exec=exec_id, function_id="probe", run_id="r1", event=event, attempt=0)
        )
        message = inbox.get(timeout=60)
    assert isinstance(message, Outcome), message
    assert message.fault is None, message.fault
    assert message.json_text is not None
    return json.loads(message.json_text)


PROBE = """
import ctypes
import os
from pathlib import Path

import harness.runtime
from harness.runtime import event, function


def _read(path):
    try:
        return "read: " + Path(path).read_text()
    except OSError as exc:
        return type(exc).__name__


def _ptrace(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
        return "attached"
    return os.strerror(ctypes.get_errno())


@function(id="probe", trigger=event("test/probe"))
def probe(ctx):
    data = ctx.event.data
    Path(data["out"]).write_text("ok")
    places = [data["env_file"], data["state"], f"/proc/{data['holder']}/environ"]
    # the process above this one (bwrap's init inside its namespace, or Landlock's supervisor)
    parents = [f"/proc/{os.getppid()}/environ", "/proc/1/environ"]
    return {
        "harness": harness.runtime.__name__,
        "written": Path(data["out"]).read_text(),
        "seen": {place: _read(place) for place in places},
        "parents": {place: _read(place) for place in parents},
        "ptrace": _ptrace(data["holder"]),
    }
"""


def test_function_host_reads_no_credential_but_imports_harness_and_writes_its_workspace(
    mode: SandboxSetting, project: Path, holder: subprocess.Popen[bytes]
) -> None:
    # Given a host in the sandbox, beside a .env, a state folder and a process holding a secret
    link = _host(project / "workspace", FunctionSandbox(mode), PROBE)
    try:
        # When a function tries to read each of them and to trace that process
        seen = _execute(
            link,
            {
                "env_file": str(project / ".env"),
                "state": str(project / ".harness" / "redis" / "password"),
                "holder": holder.pid,
                "out": str(project / "workspace" / "written.txt"),
            },
        )
    finally:
        link.close()

    # Then it imported the harness and wrote in its workspace, and read or traced nothing else
    # (nothing above it holds a secret either)
    assert seen["harness"] == "harness.runtime"
    assert seen["written"] == "ok"
    assert (project / "workspace" / "written.txt").read_text() == "ok"
    assert CANARY not in json.dumps(seen), seen
    assert not [place for place, got in seen["seen"].items() if got.startswith("read")], seen
    assert seen["ptrace"] != "attached"


NETWORK_PROBE = """
import socket

from harness.runtime import event, function


@function(id="probe", trigger=event("test/probe"))
def probe(ctx):
    try:
        socket.create_connection(("127.0.0.1", ctx.event.data["port"]), timeout=5).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__
"""


@pytest.mark.parametrize("network", [True, False])
def test_function_host_gets_the_network_the_shell_gets(
    mode: SandboxSetting, project: Path, network: bool
) -> None:
    # Given a listening port on this machine, and a host with AGENT_SHELL_NETWORK=network
    if mode == "landlock" and sandbox_mode("landlock", network) != "landlock":
        pytest.skip("this kernel's Landlock cannot turn TCP off")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        link = _host(project / "workspace", FunctionSandbox(mode, network), NETWORK_PROBE)
        try:
            # When a function connects to it
            got = _execute(link, {"port": server.getsockname()[1]})
        finally:
            link.close()

    # Then it connects only when the shell has the network
    assert (got == "connected") is network, got


SLOW_ECHO = """
import time

from harness.runtime import event, function


@function(id="probe", trigger=event("test/probe"))
def probe(ctx):
    time.sleep(ctx.event.data["busy"])  # a function at work for a while
    return ctx.event.data
"""


def test_replacement_host_in_landlock_outlives_the_thread_that_started_it(project: Path) -> None:
    # Given a host in Landlock, whose supervisor asks for SIGTERM when its parent thread ends
    if sandbox_mode("landlock") != "landlock":
        pytest.skip(f"Landlock cannot run here: {unavailable_reason(ShellPolicy('landlock'))}")
    link = _host(project / "workspace", FunctionSandbox("landlock"), SLOW_ECHO)
    try:
        first, _ = link.channel()

        # When it is ended (as after a run's timeout) and a thread of the link starts another
        link.end("a run outlived its timeout")
        second, _ = link.channel()

        # Then the new host stays: a function busy for a second on it, once that thread is
        # done, completes there
        assert second is not first
        assert _execute(link, {"busy": 1}) == {"busy": 1}
        assert link.channel()[0] is second, "the new host ended and was replaced again"
    finally:
        link.close()
