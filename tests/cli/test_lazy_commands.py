"""Start-up: `harness --help` loads no command module, commands that call no model load no
model or MCP SDK, and no command's `--help` loads Celery (each checked in a fresh interpreter,
by what is in `sys.modules`; the time is measured by bench/startup.py, never asserted), nor
does a command that only reads Redis. The lazy table stays true to the commands."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import app
from harness.commands.lazy import LazyCommands, LazyGroup
from tests.fresh_imports import loaded_after

ROOT = Path(__file__).resolve().parents[2]
MODEL_AND_MCP = ("anthropic", "openai", "mcp", "mcp_types")
SERVERS = ("celery", "fastapi", "redis", "starlette", "uvicorn")

PROBE = """
import json, sys
sys.argv = ["harness", *sys.argv[1:]]
from harness.__main__ import main
try:
    main()
except SystemExit:
    pass
heavy = {heavy!r}
print(json.dumps(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr)
"""
DEAD_REDIS = "redis://127.0.0.1:9/0"  # the discard port: nothing listens there


def _loaded_by(
    args: list[str], heavy: tuple[str, ...], tmp_path: Path, redis_url: str = DEAD_REDIS
) -> list[str]:
    """Which of `heavy` a fresh `harness ARGS` has imported when it is done. Redis is
    `redis_url` (by default a port nothing listens on), the workspace an empty folder."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "REDIS_URL": redis_url,
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
        "ANTHROPIC_API_KEY": "sk-test-not-used",
        "COLUMNS": "100",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=heavy), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = done.stderr.strip().splitlines()[-1]
    loaded: list[str] = json.loads(last)
    return loaded


@pytest.mark.parametrize("args", [["--help"], ["--version"], []])
def test_top_level_help_and_version_load_no_sdk_and_no_server(
    args: list[str], tmp_path: Path
) -> None:
    # Given a fresh interpreter
    # When `harness --help`, `--version` or a bare `harness` runs
    loaded = _loaded_by(args, MODEL_AND_MCP + SERVERS, tmp_path)
    # Then no model SDK, MCP SDK, Celery, FastAPI or Redis client was imported
    assert loaded == [], f"`harness {' '.join(args)}` imported {loaded}"


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "--help"],
        ["functions", "--help"],
        ["doctor", "--help"],
        ["agents", "--help"],
        ["mcp", "--help"],
        ["doctor", "--offline"],
        ["runs", "--json"],
        ["functions"],
        ["agents"],
        ["mcp", "list"],
    ],
)
def test_commands_that_call_no_model_load_no_model_or_mcp_sdk(
    args: list[str], tmp_path: Path
) -> None:
    # Given a fresh interpreter, a model key set and no MCP server configured
    # When a command that calls no model runs (Redis down: it fails or reports it)
    loaded = _loaded_by(args, MODEL_AND_MCP, tmp_path)
    # Then neither model SDK nor the MCP SDK was imported
    assert loaded == [], f"`harness {' '.join(args)}` imported {loaded}"


READING_COMMANDS = [
    ["runs", "--json"],
    ["pair", "list"],
    ["usage"],
    ["budget", "show"],
    ["networks"],
    ["status"],
]


@pytest.mark.parametrize("args", READING_COMMANDS)
def test_commands_that_read_redis_load_no_celery(
    args: list[str], redis_url: str, tmp_path: Path
) -> None:
    # Given a fresh interpreter and a Redis that answers
    # When a command that only reads Redis runs against it
    loaded = _loaded_by(args, ("celery", "kombu"), tmp_path, redis_url)
    # Then Celery was not imported: its kicker is built only when something is kicked
    assert loaded == [], f"`harness {' '.join(args)}` imported {loaded}"


def test_publishing_loads_celery_to_kick(redis_url: str, tmp_path: Path) -> None:
    # Given a fresh interpreter and a Redis that answers
    # When `harness publish` runs against it
    loaded = _loaded_by(["publish", "app/nothing-listens"], ("celery",), tmp_path, redis_url)
    # Then Celery was imported: publishing renders the kick message its runs are kicked with
    assert loaded == ["celery"], f"`harness publish` imported {loaded}"


def _root_commands() -> list[str]:
    """Every command of `harness`, eager and lazy, by name (listing them loads none)."""
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    return sorted(group.commands)


ROOT_COMMANDS = _root_commands()


@pytest.mark.parametrize("name", ROOT_COMMANDS)
def test_every_commands_help_loads_no_celery_and_no_sdk(name: str, tmp_path: Path) -> None:
    # Given a fresh interpreter
    # When `harness NAME --help` runs
    loaded = _loaded_by([name, "--help"], ("celery", *MODEL_AND_MCP), tmp_path)
    # Then neither Celery nor a model or MCP SDK was imported: showing help builds no runtime
    assert loaded == [], f"`harness {name} --help` imported {loaded}"


HELP_WITHOUT_REDIS = ["chat", "completion", "doctor", "events", "functions", "health", "init"]
HELP_WITHOUT_REDIS += ["knowledge", "mcp", "pair", "publish", "send", "sidecar", "up", "web"]
"""Commands whose module names its stores for the type checker only, or imports them when it
runs: their `--help` needs no Redis client (the others import their stores at the top)."""


@pytest.mark.parametrize("name", HELP_WITHOUT_REDIS)
def test_help_of_commands_that_import_stores_late_loads_no_redis_client(
    name: str, tmp_path: Path
) -> None:
    # Given a fresh interpreter
    # When `harness NAME --help` runs
    loaded = _loaded_by([name, "--help"], ("redis",), tmp_path)
    # Then redis-py was not imported (about 0.1 s with its OpenTelemetry metrics)
    assert loaded == [], f"`harness {name} --help` imported {loaded}"


def test_settings_load_no_celery_and_no_redis_client(tmp_path: Path) -> None:
    # Given a fresh interpreter
    # When the settings are read and the fleet's runtime named, as every command does first
    code = (
        "from harness.settings import get_settings\n"
        "from harness.composition import use_fleet\n"
        "get_settings(); use_fleet()"
    )
    loaded = loaded_after(code, ("celery", "redis"), tmp_path)
    # Then neither Celery nor the Redis client was imported: only building a runtime needs them
    assert loaded == [], f"reading the settings imported {loaded}"


def _help_line(command: typer.core.TyperCommand | typer.core.TyperGroup) -> str:
    """The line `harness --help` shows for `command` (typer: the first paragraph)."""
    text = inspect.cleandoc(command.short_help or command.help or "")
    return text.split("\n\n")[0].replace("\n", " ").strip()


def test_lazy_table_matches_each_commands_docstring_and_panel() -> None:
    # Given the root group and its lazy table
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    # When each lazy command is loaded
    for entry in group.lazy:
        loaded = group.commands[entry.name]
        # Then the help line and panel the table lists without loading it are the real ones
        assert _help_line(loaded) == entry.help, (  # type: ignore[arg-type]
            f"{entry.name}: harness/commands/catalog.py says {entry.help!r}, "
            f"the command says {_help_line(loaded)!r}"  # type: ignore[arg-type]
        )
        assert loaded.rich_help_panel == entry.panel, entry.name  # type: ignore[attr-defined]


def _printed_help(group: typer.core.TyperGroup) -> str:
    """What `harness --help` prints when `group` is the root."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        group.main(["--help"], prog_name="harness", standalone_mode=False)
    return out.getvalue()


def test_help_listed_lazily_is_the_help_of_the_loaded_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a fresh root group (nothing loaded) and another with every command loaded
    monkeypatch.setenv("COLUMNS", "120")
    lazy = typer.main.get_command(app)
    loaded = typer.main.get_command(app)
    assert isinstance(lazy, LazyGroup) and isinstance(loaded, LazyGroup)
    for name in list(loaded.commands):
        loaded.commands[name]
    # When both print `harness --help`
    listed, shown = _printed_help(lazy), _printed_help(loaded)
    # Then the lazy one loaded nothing, and the two are the same: commands in the same
    # panels and order, with the same help lines
    assert isinstance(lazy.commands, LazyCommands)
    assert not any(lazy.commands.is_loaded(e.name) for e in lazy.lazy)
    assert "Run the fleet" in listed, listed
    assert listed == shown


def test_a_lazy_command_runs_and_reports_usage_errors_like_the_others() -> None:
    # Given a lazily loaded command given an option it does not have
    result = CliRunner().invoke(app, ["functions", "--bogus"])
    # Then it is refused in one line pointing at its help, as before
    assert result.exit_code == 2, result.output
    assert "--bogus" in result.output and "functions --help" in result.output, result.output


@pytest.mark.parametrize("args", [["agents"], ["functions"], ["networks"], ["doctor", "--offline"]])
def test_listing_commands_load_no_celery_html_parser_or_json_schema(
    args: list[str], redis_url: str, tmp_path: Path
) -> None:
    # Given a fresh interpreter and a Redis that answers
    # When a command that lists agents, functions or networks, or checks the machine, runs
    loaded = _loaded_by(args, ("celery", "bs4", "jsonschema"), tmp_path, redis_url)
    # Then it imported neither Celery (nothing is kicked), BeautifulSoup (no page is read)
    # nor jsonschema (no network declares a state)
    assert loaded == [], f"`harness {' '.join(args)}` imported {loaded}"


def test_functions_loads_no_agent_turn(redis_url: str, tmp_path: Path) -> None:
    # Given a fresh interpreter and a Redis that answers
    # When `harness functions` lists what is registered
    loaded = _loaded_by(["functions"], ("harness.agent.turn",), tmp_path, redis_url)
    # Then the agent's turn (and the tools it imports) was not imported to tell built-ins
    # apart: their ids are named in harness/fleet_functions.py
    assert loaded == [], f"`harness functions` imported {loaded}"


def test_doctor_offline_loads_no_agent_dependencies(tmp_path: Path) -> None:
    # Given a fresh interpreter
    # When `harness doctor --offline` runs its checks (the shell's sandbox among them)
    loaded = _loaded_by(["doctor", "--offline"], ("harness.agent.deps",), tmp_path)
    # Then the agent's dependencies (model factory, search index, MCP) were not imported
    assert loaded == [], f"`harness doctor --offline` imported {loaded}"


def test_doctor_offline_loads_no_channel_sdk_nor_channel(tmp_path: Path) -> None:
    # Given a fresh interpreter, and the built-in channels' plug-ins installed
    # When `harness doctor --offline` runs every plug-in's checks
    watched = ("slack_sdk", "markdown_it", "channels.slack.channel", "channels.telegram.channel")
    loaded = _loaded_by(["doctor", "--offline"], watched, tmp_path)
    # Then neither the Slack SDK, the Markdown parser nor a channel was imported: the plug-ins
    # import their channel only to build one, and Slack's checks its SDK only to call Slack
    assert loaded == [], f"`harness doctor --offline` imported {loaded}"


def test_agents_loads_no_agent_dependencies(redis_url: str, tmp_path: Path) -> None:
    # Given a fresh interpreter and a Redis that answers
    # When `harness agents` lists every agent and its tools
    watched = ("harness.agent.deps", "harness.agent.tool_sets", "harness.tools.builtin")
    loaded = _loaded_by(["agents"], watched, tmp_path, redis_url)
    # Then it imported no tool and built no registry (their names are in
    # harness.agent.tool_names), nor what runs an agent (model providers, MCP, sessions)
    assert loaded == [], f"`harness agents` imported {loaded}"
