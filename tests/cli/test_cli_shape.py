"""The shape of `harness`: help without type labels, grouped commands, bare `harness`, --port,
and one-line usage errors."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.settings import get_settings


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_cli_bare_harness_shows_help_and_exits_0(runner: CliRunner) -> None:
    # Given no arguments
    # When `harness` runs
    result = runner.invoke(app, [])
    # Then it prints the help, commands grouped by purpose, and succeeds
    assert result.exit_code == 0, result.output
    for panel in ("Run the fleet", "Talk to the agent", "Inspect", "Set up"):
        assert panel in result.output, f"expected the {panel!r} panel in:\n{result.output}"


@pytest.mark.parametrize("command", [[], ["send"], ["up"], ["runs"], ["runs", "show"], ["doctor"]])
def test_cli_help_has_no_type_labels_or_placeholders(runner: CliRunner, command: list[str]) -> None:
    # Given any command
    # When its help is shown
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    # Then no `<bool>`-style labels or `{text}` placeholders appear
    assert result.exit_code == 0, result.output
    for label in ("<bool>", "<str>", "<int>", "<float>", "{text}", "{run_id}"):
        assert label not in result.output, f"{label} in help of {command}:\n{result.output}"


def test_cli_help_wraps_docstrings_at_words(runner: CliRunner) -> None:
    # Given `up`, whose docstring breaks its line mid-sentence in the source
    # When the top-level help is shown wide
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    # Then the sentence is on one line
    assert "Redis is embedded when REDIS_URL is unset" in result.output, result.output


def test_cli_unknown_option_is_one_line_with_exit_2(runner: CliRunner) -> None:
    # Given an option `up` does not have
    # When it is given
    result = runner.invoke(app, ["up", "--bogus"])
    # Then one line says so and points at the help
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert "--bogus" in lines[0] and "up --help" in lines[0]


def test_cli_port_option_refuses_an_out_of_range_port(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given PORT=8000
    monkeypatch.setenv("PORT", "8000")
    get_settings.cache_clear()
    # When `web --port 0` is given
    result = runner.invoke(app, ["web", "--port", "0"])
    # Then it is refused in one line before anything starts, and PORT is left alone
    assert result.exit_code == 2
    assert "--port" in result.output
    assert os.environ["PORT"] == "8000"
    get_settings.cache_clear()
