"""`harness` with the `.env` the template produces, and with bad values: one line, no traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / ".env.example"


def _variables() -> set[str]:
    return set(re.findall(r"^([A-Z_]+)=", TEMPLATE.read_text(), flags=re.M))


def harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m harness.cli ARGS` in `cwd` with none of the template's variables set in
    the environment, so only `cwd/.env` configures it."""
    env = {k: v for k, v in os.environ.items() if k not in _variables()}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.fixture
def template_dir(tmp_path: Path) -> Path:
    """A folder whose `.env` is the repository's `.env.example`, unchanged."""
    (tmp_path / ".env").write_text(TEMPLATE.read_text())
    return tmp_path


COMMANDS = [["--help"], ["runs"], ["runs", "show", "r1"], ["doctor", "--offline"]]


@pytest.mark.parametrize("args", COMMANDS)
def test_cli_with_the_copied_template_prints_no_traceback(
    template_dir: Path, args: list[str]
) -> None:
    # Given `cp .env.example .env`, empty values and all
    # When a command runs there
    result = harness(template_dir, *args)
    # Then it never shows a traceback, and a settings problem is not what it reports
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert "validation error" not in output.lower(), output


def test_cli_with_the_copied_template_reports_the_missing_redis_in_one_line(
    template_dir: Path,
) -> None:
    # Given the template and no Redis running
    # When `harness runs` runs
    result = harness(template_dir, "runs")
    # Then it says what to do in one line on stderr and exits non-zero
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert "REDIS_URL" in result.stderr


def test_cli_with_a_bad_port_names_the_variable_in_one_line(template_dir: Path) -> None:
    # Given PORT=abc in .env
    (template_dir / ".env").write_text(TEMPLATE.read_text().replace("PORT=8000", "PORT=abc"))
    # When any command that reads the settings runs
    result = harness(template_dir, "runs")
    # Then it exits 2 with one line naming PORT and a good value
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: PORT:"), lines
    assert "PORT=8000" in lines[0]


def test_cli_with_two_bad_values_prints_one_line_for_each(template_dir: Path) -> None:
    # Given a bad PORT and a bad ON_NEW_MESSAGE
    text = TEMPLATE.read_text().replace("PORT=8000", "PORT=abc")
    (template_dir / ".env").write_text(text.replace("ON_NEW_MESSAGE=steer", "ON_NEW_MESSAGE=maybe"))
    # When a command runs
    result = harness(template_dir, "runs")
    # Then each variable gets its own line, and the exit code is 2
    assert result.returncode == 2
    lines = sorted(result.stderr.strip().splitlines())
    assert [line.split(":")[1].strip() for line in lines] == ["ON_NEW_MESSAGE", "PORT"], lines
    assert "'maybe'" in lines[0]


def test_cli_never_echoes_the_value_of_a_bad_secret(template_dir: Path) -> None:
    # Given a webhook secret with characters Telegram refuses
    text = TEMPLATE.read_text().replace(
        "TELEGRAM_WEBHOOK_SECRET=", "TELEGRAM_WEBHOOK_SECRET=hunter2 with spaces"
    )
    (template_dir / ".env").write_text(text)
    # When a command reads the Telegram settings
    result = harness(template_dir, "setup", "telegram")
    # Then the line names the variable but not its value
    assert result.returncode == 2
    assert "TELEGRAM_WEBHOOK_SECRET" in result.stderr
    assert "hunter2" not in result.stderr


SCHEDULE_VALUES = [
    pytest.param(
        'HEARTBEAT_CRON="*/30 * * * *"', 'HEARTBEAT_CRON="every day"', "HEARTBEAT_CRON", id="cron"
    ),
    pytest.param("AGENT_TIMEZONE=UTC", "AGENT_TIMEZONE=Mars/Base", "AGENT_TIMEZONE", id="zone"),
]


@pytest.mark.parametrize(("good", "bad", "variable"), SCHEDULE_VALUES)
@pytest.mark.parametrize("command", [["doctor", "--offline"], ["up"]], ids=" ".join)
def test_cli_refuses_a_cron_or_time_zone_the_scheduler_cannot_use_before_starting_anything(
    template_dir: Path, good: str, bad: str, variable: str, command: list[str]
) -> None:
    # Given a cron expression or a time zone the worker could not use (issue 32: it died 15 s
    # later with an error that did not name the variable)
    text = TEMPLATE.read_text()
    assert good in text, f"expected {good!r} in .env.example"
    (template_dir / ".env").write_text(text.replace(good, bad))
    # When `doctor --offline` or `up` runs
    result = harness(template_dir, *command)
    # Then it exits 2 with one line naming the variable, having started nothing
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {variable}:"), lines
    assert bad.split("=", 1)[1].strip('"') in lines[0], lines
    assert "started (pid" not in result.stdout, result.stdout
    assert not (template_dir / ".harness").exists()
