"""`harness up --only NAMES` and `--verbose`: the processes chosen, the embedded Redis only
when `redis` is named (else the running fleet's), a one-line usage error for a name the fleet
does not have, and Celery's banner hidden unless verbose."""

from __future__ import annotations

import io
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ConfigurationError
from harness.fleet.selection import UnknownProcessError, only
from harness.fleet.supervisor import default_processes, run_fleet
from harness.runtime.banner import QUIET_ENV, start_celery_worker
from harness.settings import Settings
from harness.state_dir import redis_url_file, state_dir

SHOW_ENV = f"import os; print('url=' + os.environ['REDIS_URL'], 'quiet=' + os.environ.get('{QUIET_ENV}', ''))"  # noqa: E501


def _settings(workspace: Path) -> Settings:
    return Settings(_env_file=None, agent_workspace=workspace, redis_url=None)  # type: ignore[call-arg]


def test_only_keeps_the_named_processes_in_the_fleets_order() -> None:
    # Given the fleet's processes
    processes = default_processes()
    # When two are chosen, in another order
    chosen = only(processes, "worker, web")
    # Then exactly those run, with their usual commands, and no embedded Redis
    assert list(chosen.processes) == ["web", "worker"]
    assert chosen.processes["worker"] == processes["worker"]
    assert chosen.embedded_redis is False
    assert only(processes, "redis,scheduler").embedded_redis is True


@pytest.mark.parametrize("names", ["web,nope", "", "redis,Web", "redis"])
def test_only_refuses_a_name_the_fleet_does_not_have(names: str) -> None:
    # Given the fleet's processes, When an unknown (or no) name is chosen, Then it says which exist
    with pytest.raises(UnknownProcessError, match="web, worker, scheduler"):
        only(default_processes(), names)


def test_up_with_an_unknown_name_is_a_one_line_usage_error() -> None:
    # When `harness up --only` names a process that does not exist
    result = CliRunner().invoke(app, ["up", "--only", "web,nope"])
    # Then one line says so, exit 2, and nothing started
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "nope" in lines[0] and "--only" in lines[0], lines


@pytest.mark.integration
def test_only_without_redis_uses_the_running_fleets_redis_and_hides_the_banner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    # Given a fleet of this workspace that published its Redis (no REDIS_URL configured)
    workspace = tmp_path / "workspace"
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("AGENT_WORKSPACE", str(workspace))
    settings = _settings(workspace)
    published = redis_url_file(state_dir(settings))
    published.parent.mkdir(parents=True, exist_ok=True)
    published.write_text(redis_url)
    output = io.StringIO()
    # When a second `up --only` runs one process without `redis`, not verbose
    show = f"{shlex.quote(sys.executable)} -c {shlex.quote(SHOW_ENV)}"
    code = run_fleet(settings, {"worker": show}, output=output, embedded_redis=False, quiet=True)
    # Then its process got that Redis and the quiet flag, and no Redis was started here
    text = output.getvalue()
    assert code == 0, text
    assert f"url={redis_url} quiet=1" in text, text
    assert "embedded Redis" not in text, text


def test_only_without_redis_and_no_fleet_running_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no REDIS_URL and no fleet of this workspace
    workspace = tmp_path / "workspace"
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("AGENT_WORKSPACE", str(workspace))
    # When `up --only worker` runs, Then it says where it looked, before starting anything
    with pytest.raises(ConfigurationError, match="no Redis found"):
        run_fleet(_settings(workspace), {"worker": "true"}, embedded_redis=False)


def test_celery_is_asked_for_no_banner_only_when_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a Celery app that notes the options each worker is built with
    built: list[dict[str, object]] = []

    class App:
        def Worker(self, **options: object) -> SimpleNamespace:
            built.append(options)
            return SimpleNamespace(start=lambda: None)

    # When the fleet started a worker quietly, and when it did not
    monkeypatch.setenv(QUIET_ENV, "1")
    start_celery_worker(App(), concurrency=2)
    monkeypatch.delenv(QUIET_ENV)
    start_celery_worker(App(), concurrency=2)
    # Then only the quiet one is built quiet (no banner)
    assert built == [{"quiet": True, "concurrency": 2}, {"quiet": False, "concurrency": 2}]
