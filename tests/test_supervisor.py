"""`harness up`: run_fleet runs processes with an embedded Redis and tidies up after them."""

from __future__ import annotations

import io
import os
import re
import shlex
import signal
import socket
import sys
import threading
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from harness.errors import ConfigurationError
from harness.fleet.embedded_redis import free_port
from harness.fleet.readiness import ready_line
from harness.fleet.supervisor import (
    beside_the_worker,
    default_processes,
    procfile_processes,
    run_fleet,
)
from harness.settings import Settings, get_settings
from harness.state_dir import redis_url_file
from tests.waiting import wait_until

# Each child prints, then waits until every child has printed, so honcho (which stops the
# fleet when the first process exits) cannot cut one off before its output.
CHILD = """
import os, pathlib, sys, time
name, rendezvous, expected = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3])
url = os.environ.get("REDIS_URL", "")
if name == "a":
    print("hello from a")
else:
    import redis
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    print(f"REDIS_URL={url} ping={client.ping()}")
(rendezvous / name).touch()
deadline = time.monotonic() + 30
while len(list(rendezvous.iterdir())) < expected and time.monotonic() < deadline:
    time.sleep(0.02)
"""


def _settings(workspace: Path, redis_url: str | None = None) -> Settings:
    return Settings(_env_file=None, agent_workspace=workspace, redis_url=redis_url)  # type: ignore[call-arg]


def _children(tmp_path: Path, names: tuple[str, ...]) -> dict[str, str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    python = shlex.quote(sys.executable)
    return {
        name: f"{python} {shlex.quote(str(script))} {name} {shlex.quote(str(rendezvous))} "
        f"{len(names)}"
        for name in names
    }


@pytest.mark.integration
def test_run_fleet_starts_an_embedded_redis_for_its_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no REDIS_URL and two processes
    monkeypatch.delenv("REDIS_URL", raising=False)
    workspace = tmp_path / "workspace"
    output = io.StringIO()
    handlers = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    # When the fleet runs
    code = run_fleet(_settings(workspace), _children(tmp_path, ("a", "b")), output=output)
    # Then both outputs appear, prefixed by process name, and b reached a live Redis
    text = output.getvalue()
    assert code == 0, text
    assert re.search(r"^\S+ a\s+\| hello from a$", text, re.MULTILINE), text
    seen = re.search(
        r"^\S+ b\s+\| REDIS_URL=(redis://:\S+@127\.0\.0\.1:\d+/0) ping=True$", text, re.M
    )
    assert seen, f"expected b to print a live, password-protected Redis URL in:\n{text}"
    # And the embedded Redis is gone, with its URL file
    assert not redis_url_file(tmp_path / ".harness").exists()
    client = redis.Redis.from_url(seen.group(1), retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.ConnectionError):
        client.ping()
    client.close()
    # And its data is in the state folder beside the workspace, not in the workspace
    assert any((tmp_path / ".harness" / "redis").glob("appendonly*"))
    assert not (workspace / ".harness").exists()
    # And the signal handlers honcho installed are gone
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


@pytest.mark.integration
def test_run_fleet_uses_the_configured_redis_url_instead_of_starting_one(
    tmp_path: Path,
) -> None:
    configured = "redis://127.0.0.1:1/0"
    script = "import os; print('url=' + os.environ['REDIS_URL'])"
    output = io.StringIO()
    code = run_fleet(
        _settings(tmp_path / "workspace", configured),
        {"echo": f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"},
        output=output,
    )
    assert code == 0
    assert f"echo   | url={configured}" in output.getvalue()
    assert not (tmp_path / ".harness" / "redis").exists(), "expected no embedded Redis"


@pytest.mark.integration
def test_run_fleet_stops_the_rest_when_one_exits_and_returns_its_code(tmp_path: Path) -> None:
    # Given a long-running process and one that fails at once
    python = shlex.quote(sys.executable)
    processes = {
        "sleeper": f"{python} -c 'import time; time.sleep(120)'",
        "failing": f"{python} -c 'import sys; sys.exit(3)'",
    }
    output = io.StringIO()
    # When the fleet runs
    code = run_fleet(_settings(tmp_path, "redis://127.0.0.1:1/0"), processes, output=output)
    # Then the failure's code is returned and the sleeper was stopped
    assert code == 3, output.getvalue()
    assert "sending SIGTERM to sleeper" in output.getvalue()


def test_run_fleet_without_processes_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no processes"):
        run_fleet(_settings(tmp_path), {})


def test_run_fleet_with_a_shared_root_and_no_redis_is_refused_before_starting(
    tmp_path: Path,
) -> None:
    # Given several hosts' shared root and no Redis configured
    settings = Settings(_env_file=None, harness_shared_root=tmp_path / "shared")  # type: ignore[call-arg]
    # Then the fleet refuses to start one embedded Redis per host on one data folder
    with pytest.raises(ConfigurationError, match="HARNESS_SHARED_ROOT"):
        run_fleet(settings, {"a": "true"})
    assert not (tmp_path / "shared" / "state" / "redis").exists()


def test_default_processes_run_this_python_on_the_cli_in_place_of_their_shell() -> None:
    processes = default_processes()
    assert list(processes) == ["web", "worker", "scheduler", "gateway", "sidecar"]
    assert processes["worker"] == f"exec {shlex.quote(sys.executable)} -m harness.cli worker"
    assert processes["gateway"] == f"exec {shlex.quote(sys.executable)} -m harness.cli gateway"


def test_the_fleets_own_scheduler_and_sidecar_run_on_its_worker_other_commands_as_written() -> None:
    # Given the fleet's own processes
    processes = default_processes()
    # When the scheduler and the sidecar are put beside the worker
    folded = beside_the_worker(processes)
    # Then neither is a process of its own: the worker runs both on threads, and leaves the
    # model calls and the replies' delivery to the gateway, which stays a process of its own
    assert list(folded) == ["web", "worker", "gateway"]
    worker = processes["worker"]
    leaves = "--no-gateway --queues harness"
    assert folded["worker"] == f"{worker} --with-scheduler --with-sidecar {leaves}"
    assert folded["gateway"] == f"{processes['gateway']} --deliver"
    # And a worker chosen with one of them runs that one only
    some = {"worker": worker, "sidecar": processes["sidecar"]}
    assert beside_the_worker(some) == {"worker": f"{worker} --with-sidecar"}
    assert beside_the_worker({"worker": worker, "gateway": processes["gateway"]}) == {
        "worker": f"{worker} {leaves}",
        "gateway": f"{processes['gateway']} --deliver",
    }
    # And a worker chosen alone (`--only worker`: it makes its own model calls), any of them
    # without the worker, or a Procfile's commands, stay as written
    for kept in (
        {"worker": worker},
        {"scheduler": processes["scheduler"], "sidecar": processes["sidecar"]},
        {"gateway": processes["gateway"]},
        {"worker": "harness worker", "scheduler": "harness scheduler"},
    ):
        assert beside_the_worker(kept) == kept


def test_default_processes_have_no_gateway_when_workers_make_the_model_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given MODEL_CALLS=inline
    monkeypatch.setenv("MODEL_CALLS", "inline")
    get_settings.cache_clear()
    try:
        # When the fleet's processes are listed and folded
        processes = beside_the_worker(default_processes())
    finally:
        get_settings.cache_clear()
    # Then there is no gateway, and the worker is not told to leave the calls to one
    assert "gateway" not in processes, processes
    assert "--no-gateway" not in processes["worker"]


def test_default_processes_leave_out_the_sidecar_when_it_is_disabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given SIDECAR_ENABLED=false
    monkeypatch.setenv("SIDECAR_ENABLED", "false")
    get_settings.cache_clear()
    try:
        # When the fleet's processes are listed
        processes = default_processes()
    finally:
        get_settings.cache_clear()
    # Then there is no sidecar among them
    assert "sidecar" not in processes, processes


def test_procfile_processes_reads_name_command_lines(tmp_path: Path) -> None:
    procfile = tmp_path / "Procfile"
    procfile.write_text("# fleet\nweb: harness web --reload\n\nworker:harness worker\n")
    assert procfile_processes(procfile) == {
        "web": "harness web --reload",
        "worker": "harness worker",
    }


def test_procfile_processes_refuses_a_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read Procfile"):
        procfile_processes(tmp_path / "Procfile")
    (tmp_path / "Procfile").write_text("# nothing\n")
    with pytest.raises(ConfigurationError, match="declares no processes"):
        procfile_processes(tmp_path / "Procfile")


@pytest.mark.integration
def test_run_fleet_stops_when_the_embedded_redis_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a fleet whose only process shuts the embedded Redis down, then waits
    monkeypatch.delenv("REDIS_URL", raising=False)
    script = (
        "import os, time, redis\n"
        "try:\n"
        "    redis.Redis.from_url(os.environ['REDIS_URL']).shutdown(nosave=True)\n"
        "except redis.ConnectionError:\n"
        "    pass\n"
        "time.sleep(120)\n"
    )
    output = io.StringIO()
    # When the fleet runs
    code = run_fleet(
        _settings(tmp_path / "workspace"),
        {"killer": f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"},
        output=output,
    )
    # Then it stops everything and fails, saying why
    assert code == 1, output.getvalue()
    assert "the embedded Redis exited; stopping the fleet" in output.getvalue()


# A stand-in web process: answers GET /readyz with 200 (echoing the fleet id it was given
# when told to), counting the requests in a file.
READYZ = """
import os, pathlib, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
count, echo = pathlib.Path(sys.argv[2]), sys.argv[3] == "echo"

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        if echo:
            self.send_header("X-Harness-Fleet", os.environ["HARNESS_FLEET_ID"])
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
        count.write_text(str(int(count.read_text() or 0) + 1) if count.exists() else "1")

    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


@pytest.mark.integration
@pytest.mark.parametrize("echo", ["echo", "silent"])
def test_run_fleet_says_ready_only_when_its_own_web_process_answers(
    tmp_path: Path, echo: str
) -> None:
    # Given a web process whose /readyz answers 200, with or without this start's fleet id
    port, count = free_port(), tmp_path / "count"
    script = tmp_path / "readyz.py"
    script.write_text(READYZ)
    web = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {port} {count} {echo}"
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, agent_workspace=tmp_path, redis_url="redis://127.0.0.1:1/0", port=port
    )
    output = io.StringIO()

    def stop_once_judged() -> None:
        # the first answer with our id is the last one asked for; without it, asked again
        if echo == "echo":
            wait_until(lambda: "ready:" in output.getvalue(), what="ready", timeout=60)
        else:
            wait_until(
                lambda: count.exists() and count.read_text() == "2", what="2 polls", timeout=60
            )
        os.kill(os.getpid(), signal.SIGTERM)

    judge = threading.Thread(target=stop_once_judged, daemon=True)
    judge.start()
    # When the fleet runs until its readiness was judged
    run_fleet(settings, {"web": web}, output=output)
    judge.join(timeout=10)
    # Then `ready:` is printed only when the answer carried our fleet id
    said_ready = "ready: chat with `harness chat`" in output.getvalue()
    assert said_ready is (echo == "echo"), output.getvalue()


def test_run_fleet_refuses_a_port_in_use_before_starting_anything(tmp_path: Path) -> None:
    # Given another server listening on the web port
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        settings = Settings(_env_file=None, agent_workspace=tmp_path / "workspace", port=port)  # type: ignore[call-arg]
        output = io.StringIO()
        python = shlex.quote(sys.executable)
        # When the fleet is asked to start
        with pytest.raises(ConfigurationError) as refused:
            run_fleet(settings, {"web": f"{python} -c 'print(1)'"}, output=output)
    # Then it says which setting to change, and started nothing (not even Redis)
    assert f"port {port} is already in use" in str(refused.value)
    assert "PORT" in str(refused.value)
    assert output.getvalue() == ""
    assert not (tmp_path / ".harness" / "redis").exists()


def test_ready_line_offers_the_http_api_only_with_a_key() -> None:
    # Given a fleet serving on port 8000, with and without HARNESS_API_KEY
    with_key = ready_line(8000, api_key=True)
    without = ready_line(8000, api_key=False)
    # Then only the one with a key offers POST /api/chat (without one it answers 503), and
    # the other says how to turn it on; both offer `harness chat`
    assert "or POST /api/chat on port 8000" in with_key, with_key
    assert ", or POST /api/chat" not in without and "needs HARNESS_API_KEY" in without, without
    assert all(line.startswith("ready: chat with `harness chat`") for line in (with_key, without))
