"""Every command, option, variable and probe URL the deployment files name exists in the code:
a file that names something the code does not have fails here, not in production.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import typer
from fastapi.testclient import TestClient
from pydantic_settings import BaseSettings
from typer import _click as click  # typer vendors its own click

from harness.cli import app as cli_app
from harness.errors import BusUnavailableError
from harness.runtime import Runtime
from harness.settings import Settings
from harness.web.app import create_app, default_routers
from tests.deploy import mentions
from tests.deploy.helm_render import ROOT

# Variables the image sets for Python and pip themselves, not for harness.
PYTHON_VARIABLES = frozenset(
    {
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PIP_NO_CACHE_DIR",
        "PIP_DISABLE_PIP_VERSION_CHECK",
    }
)
# compose.yaml's own knobs (image, published port, Redis's memory): docs/deploy.md lists them.
COMPOSE_ONLY = frozenset({"HARNESS_IMAGE", "HARNESS_WEB_PORT", "REDIS_MAXMEMORY"})


def _settings_variables() -> set[str]:
    """The environment variable of every field of the core settings and of each channel's."""
    classes: list[type[BaseSettings]] = [Settings]
    for path in sorted((ROOT / "channels").glob("*/settings.py")):
        module = importlib.import_module(f"channels.{path.parent.name}.settings")
        classes += [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, BaseSettings)
            and value.__module__ == module.__name__
        ]
    names: set[str] = set()
    for cls in classes:
        prefix = str(cls.model_config.get("env_prefix", ""))
        for field_name, field in cls.model_fields.items():
            alias = field.validation_alias
            names.add(alias.upper() if isinstance(alias, str) else (prefix + field_name).upper())
    return names


def _missing(name: str, exists: bool) -> str | None:
    """A failure line for `name`, or None when it is as expected."""
    return None if exists else f"{name!r} does not exist in the code"


def _command_problems(root: Any, line: mentions.CommandLine) -> list[str]:
    """What in one `harness ...` line the CLI refuses: an unknown (sub)command, option or
    value. The line is parsed by the CLI itself (`make_context`), without running it."""
    command = root
    words = list(line.argv)
    path: list[str] = []
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        path.append(words.pop(0))
        found = command.commands.get(path[-1])
        problem = _missing(f"command {' '.join(path)}", found is not None)
        if found is None:
            return [f"{line.where}: {problem}"] if problem else []
        command = found
    try:
        command.make_context(" ".join(path), words)
    except click.exceptions.ClickException as exc:
        return [f"{line.where}: `harness {' '.join(line.argv)}`: {exc.format_message()}"]
    return []


def test_deploy_files_run_only_harness_commands_and_options_that_exist() -> None:
    # Given the CLI as the `harness` entry point builds it
    group = typer.main.get_command(cli_app)
    # When every command line of compose, the chart, the systemd units and the image is read
    lines = list(mentions.command_lines())
    assert {line.argv[0] for line in lines} >= {"web", "worker", "scheduler", "sidecar"}
    # Then each subcommand, option and choice exists
    problems = [p for line in lines for p in _command_problems(group, line)]
    assert not problems, "\n".join(problems)


def test_deploy_files_set_only_variables_the_settings_read() -> None:
    # Given the variables the core and channel settings read
    known = _settings_variables()
    # When every variable a deployment file gives a harness process is checked
    problems = [
        f"{v.where}: {v.name} is read by no settings class"
        for v in mentions.variables()
        if v.name not in known and v.name not in PYTHON_VARIABLES
    ]
    # Then none is a typo or a setting that does not exist
    assert not problems, "\n".join(problems)


def test_compose_interpolates_only_settings_or_documented_knobs() -> None:
    docs = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    known = _settings_variables()
    for name in sorted(mentions.interpolated()):
        assert name in known or (name in COMPOSE_ONLY and f"`{name}`" in docs), (
            f"compose.yaml reads ${{{name}}}: neither a setting nor documented in docs/deploy.md"
        )


def _no_redis() -> Runtime:
    raise BusUnavailableError("no Redis in this test")


def test_probe_urls_are_routes_of_the_web_app_on_its_port() -> None:
    # Given the web app with its production routers and no Redis behind it
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    client = TestClient(create_app(_no_redis, settings, routers=default_routers()))
    problems: list[str] = []
    for probe in mentions.probe_urls():
        # When each probed path is asked for: Then the app has it (any answer but 404) on the
        # port the web server listens on
        answer = client.get(probe.path)
        problem = _missing(f"route {probe.path}", answer.status_code != 404)
        if problem:
            problems.append(f"{probe.where}: {problem}")
        if probe.port != settings.port:
            problems.append(f"{probe.where}: port {probe.port}, the server's is {settings.port}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("process", ["worker", "scheduler", "sidecar"])
def test_each_background_process_has_an_exec_probe_everywhere(process: str) -> None:
    probes = [
        line
        for line in mentions.command_lines()
        if line.argv[:1] == ("health",) and process in line.argv
    ]
    wheres = {line.where.split()[0] for line in probes}
    assert wheres == {"compose.yaml", "helm"}, f"{process}: probed in {sorted(wheres)}"


def test_keda_scales_on_the_queue_workers_consume() -> None:
    # Given the worker command's default queues
    worker = typer.main.get_command(cli_app).commands["worker"]  # type: ignore[attr-defined]
    queues = next(p for p in worker.params if p.name == "queues").default.split(",")
    # Then the autoscaler watches the Redis list of each of them
    scaled = [o for o in mentions.rendered_chart() if o["kind"] == "ScaledObject"]
    assert scaled, "example-render.yaml has no ScaledObject"
    lists = [trigger["metadata"]["listName"] for trigger in scaled[0]["spec"]["triggers"]]
    assert lists == queues == ["harness", "harness-delivery"]


def test_workspace_and_state_lie_on_the_shared_volume_and_apart() -> None:
    spec = mentions.compose()
    for name in mentions.COMPOSE_HARNESS_SERVICES:
        service = spec["services"][name]
        env = service["environment"]
        targets = [volume.split(":")[1] for volume in service["volumes"]]
        for key in ("AGENT_WORKSPACE", "HARNESS_STATE_DIR"):
            assert any(Path(env[key]).is_relative_to(t) for t in targets), f"{name}: {key}"
        assert not Path(env["HARNESS_STATE_DIR"]).is_relative_to(env["AGENT_WORKSPACE"])
    config = next(o for o in mentions.rendered_chart() if o["kind"] == "ConfigMap")["data"]
    deployments = [o for o in mentions.rendered_chart() if o["kind"] == "Deployment"]
    for deployment in deployments:
        mounts = deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        for key in ("AGENT_WORKSPACE", "HARNESS_STATE_DIR"):
            assert any(Path(config[key]).is_relative_to(m["mountPath"]) for m in mounts)
