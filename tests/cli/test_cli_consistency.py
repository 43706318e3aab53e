"""Every `harness` command behaves the same way (docs/cli.md): `--json` on every command that
prints data, one exit code per failure (Redis down: 3, on stderr, nothing on stdout), full
values when piped, optional arguments in brackets, and a shell completion script."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer import _click as click
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from harness.agent.memory.distill import DISTILL_EVENT, HEARTBEAT_FUNCTION
from harness.cli import app
from harness.commands.exit_codes import TABLE, UNREACHABLE
from harness.records.stores import redis_records
from harness.runtime import Context, Runtime, event, function, publish, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import get_settings

REPO = Path(__file__).resolve().parents[2]
LONG_ID = "a-function-whose-id-is-far-too-long-for-a-column-of-an-eighty-wide-table"

# Commands that print no data of their own: the fleet's processes, the interactive chat and
# `init` (it writes .env), a stream that is JSON already, a script, and `eval`, whose `--json`
# names the report file.
NO_JSON = {
    "up", "worker", "scheduler", "gateway", "web", "sidecar", "poll", "chat", "init", "events tail",
    "completion", "eval",
}  # fmt: skip


def _leaves(command: click.core.Command, path: str = "") -> Iterator[tuple[str, click.Command]]:
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            yield from _leaves(sub, f"{path} {name}".strip())
        if path and getattr(command, "invoke_without_command", False):
            yield path, command  # `harness runs` lists runs itself
    else:
        yield path, command


def test_cli_every_command_that_prints_data_has_json() -> None:
    # Given every command of `harness`
    leaves = dict(_leaves(get_command(app)))
    # When their options are read
    without = sorted(
        name
        for name, command in leaves.items()
        if name not in NO_JSON and not any("--json" in param.opts for param in command.params)
    )
    # Then each one that prints data takes --json
    assert without == [], f"commands without --json: {without}"


@pytest.fixture
def fleet(runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """The fakeredis runtime as the CLI's, and a workspace and state folder of the test's."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_WORKSPACE", str(workspace))
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MCP_CONFIG", str(tmp_path / "mcp.json"))
    get_settings.cache_clear()
    set_runtime(runtime)
    yield runtime
    set_runtime(None)
    get_settings.cache_clear()


def _finished_and_live(rt: Runtime, registry: FunctionRegistry) -> tuple[str, str]:
    """A finished run of LONG_ID and a live (queued, never drained) run of another."""

    @function(id=LONG_ID, trigger=event("app/go"), registry=registry)
    def go(ctx: Context) -> int:
        return int(ctx.step.run("one", lambda: 1))

    @function(id="waiting", trigger=event("app/later"), registry=registry)
    def later(ctx: Context) -> None:
        return None

    @function(id=HEARTBEAT_FUNCTION, trigger=event(DISTILL_EVENT), registry=registry)
    def heartbeat(ctx: Context) -> None:  # `memory distill` needs only its registration
        return None

    rt.register_functions()
    finished = publish({"name": "app/go", "data": {}}, runtime=rt).run_ids[0]
    drain(rt)
    live = publish({"name": "app/later", "data": {}}, runtime=rt).run_ids[0]
    return finished, live


JSON_COMMANDS = [
    (["runs"], None),
    (["runs", "show", "{finished}"], {"run", "trigger", "steps", "children"}),
    (["runs", "fork", "{finished}"], {"run_id", "forked_from"}),
    (["runs", "rerun", "{finished}"], {"run_id", "forked_from"}),
    (["runs", "replay", "{finished}"], {"run_id", "identical", "first_difference", "diff"}),
    (["runs", "cancel", "{live}"], {"run_id", "cancelling"}),
    (["functions"], {"functions", "sidecar_alive", "refused", "load_errors", "failures"}),
    (["agents"], {"agents", "networks", "errors", "warnings"}),
    (["networks"], {"networks", "errors", "warnings"}),
    (["usage"], None),
    (["budget", "show"], {"day", "scopes"}),
    (["budget", "raise", "person", "telegram:user:1", "2"], {"day", "scope", "id", "usd_limit"}),
    (["send", "hello"], {"event_id", "name", "duplicate", "run_ids"}),
    (["publish", "app/other"], {"event_id", "name", "duplicate", "run_ids"}),
    (["pair", "list"], {"pending", "approved"}),
    (["pair", "approve", "{code}"], {"code", "subject", "label", "channel"}),
    (["pair", "deny", "{code}"], {"code", "subject", "label", "channel"}),
    (["memory", "history"], {"current_bytes", "versions", "rejected"}),
    (["memory", "show"], {"version", "rejected", "text"}),
    (["memory", "distill", "--no-wait"], {"run_id", "status", "result"}),
    (["knowledge", "list"], None),
    (["knowledge", "reindex"], {"documents", "memory_files"}),
    (["mcp", "list"], {"config", "ignored_workspace_file", "servers"}),
    (["doctor", "--offline"], {"ok", "failed", "checks"}),
    (["health", "--process", "worker"], {"process", "alive", "file", "max_age_s"}),
]


@pytest.mark.parametrize(("args", "keys"), JSON_COMMANDS, ids=lambda v: " ".join(v or []))
def test_cli_json_output_parses_with_its_documented_keys(
    fleet: Runtime, registry: FunctionRegistry, args: list[str], keys: set[str] | None
) -> None:
    # Given a finished run, a live one and a pending pairing code
    finished, live = _finished_and_live(fleet, registry)
    code = redis_records(fleet).pairing.request("telegram:user:1", "Ann", "telegram")[0].code
    filled = [a.format(finished=finished, live=live, code=code) for a in args]
    # When the command runs with --json
    result = CliRunner().invoke(app, [*filled, "--json"])
    # Then stdout is one JSON document with the documented keys
    assert result.exit_code in (0, 1), result.output  # doctor and health: a failed check is 1
    parsed = json.loads(result.stdout)
    if keys is not None:
        assert keys <= set(parsed), f"{args}: expected keys {keys} in {sorted(parsed)}"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def redis_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """REDIS_URL at a closed port; the CLI builds its runtime from the settings."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{_closed_port()}/0")
    get_settings.cache_clear()
    set_runtime(None)
    yield
    set_runtime(None)
    get_settings.cache_clear()


NEEDS_REDIS = [
    ["runs"], ["runs", "show", "r1"], ["runs", "cancel", "r1"], ["runs", "fork", "r1"],
    ["runs", "rerun", "r1"], ["runs", "replay", "r1"], ["runs", "redeliver", "r1"],
    ["functions"], ["usage"], ["budget", "show"], ["budget", "raise", "chat", "c1", "1"],
    ["send", "hi"], ["send", "--wait", "hi"], ["publish", "app/x"], ["memory", "distill"],
    ["pair", "list"], ["pair", "approve", "ABC"], ["pair", "deny", "ABC"],
    ["pair", "revoke", "telegram:user:1"], ["chat"], ["events", "tail"],
]  # fmt: skip


@pytest.mark.parametrize("args", NEEDS_REDIS, ids=" ".join)
def test_cli_redis_down_is_exit_3_with_one_line_on_stderr(
    redis_down: None, args: list[str]
) -> None:
    # Given REDIS_URL pointing at a closed port
    # When a command that needs Redis runs
    result = CliRunner().invoke(app, args, input="hello\n")
    # Then it exits 3 (unreachable) with one line on stderr and nothing on stdout
    assert result.exit_code == UNREACHABLE, result.output
    assert result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach Redis"), lines


@pytest.mark.parametrize("args", [["functions"], ["runs"]], ids=" ".join)
def test_cli_piped_table_keeps_full_ids_without_boxes(
    fleet: Runtime, registry: FunctionRegistry, args: list[str]
) -> None:
    # Given a function whose id is longer than an 80-column table can show
    _finished_and_live(fleet, registry)
    # When the table is printed into a pipe
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    # Then the whole id is on one line, and no box is drawn
    assert result.exit_code == 0, result.output
    assert any(LONG_ID in line for line in result.stdout.splitlines()), result.stdout
    assert not set("│┃━─┏┡└") & set(result.stdout), result.stdout


def test_cli_help_shows_an_optional_argument_in_brackets() -> None:
    # When the help of `memory show`, whose VERSION is optional, is shown
    result = CliRunner().invoke(app, ["memory", "show", "--help"], env={"COLUMNS": "120"})
    # Then its usage line says so
    usage = next(line for line in result.stdout.splitlines() if "Usage:" in line)
    assert usage.strip().endswith("[VERSION]"), usage


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_cli_completion_prints_the_script(shell: str) -> None:
    # When the completion script of a shell is asked for
    result = CliRunner().invoke(app, ["completion", shell])
    # Then it is printed, calling harness back with _HARNESS_COMPLETE
    assert result.exit_code == 0, result.output
    assert f"_HARNESS_COMPLETE=complete_{shell}" in result.stdout, result.stdout


def test_cli_completion_answers_the_shell() -> None:
    # Given the words `harness ru` typed in bash
    env = {**os.environ, "PYTHONPATH": str(REPO), "_HARNESS_COMPLETE": "complete_bash",
           "COMP_WORDS": "harness ru", "COMP_CWORD": "1"}  # fmt: skip
    # When bash asks harness for completions
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli"], env=env, capture_output=True, text=True, timeout=60
    )
    # Then `runs` is offered
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["runs"], done.stdout


def test_cli_docs_list_every_exit_code() -> None:
    # Given the exit-code table of the code
    docs = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    # Then docs/cli.md has a row for each code with its name
    for code, name, _ in TABLE:
        assert f"| {code} | {name} |" in docs, f"docs/cli.md lacks the row of exit code {code}"


def test_cli_no_fleet_running_is_exit_3_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no REDIS_URL and no fleet running for this user
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    get_settings.cache_clear()
    set_runtime(None)
    try:
        # When a command that needs Redis runs
        result = CliRunner().invoke(app, ["runs"])
    finally:
        set_runtime(None)
        get_settings.cache_clear()
    # Then it is "unreachable" like a Redis that does not answer, saying how to start one
    assert result.exit_code == UNREACHABLE, result.output
    assert result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no fleet running" in lines[0] and "harness up" in lines[0], lines
