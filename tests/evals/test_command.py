"""`harness eval` end to end against the scripted model: the table, the reports, the exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.settings import get_settings
from tests.fakes.model_server import ModelServer, Reply

SUITE = """
cases:
  - id: say-lemons
    messages: ["Name a sour fruit."]
    expect: {answer: {contains: [lemon]}}
"""


def test_eval_command_prints_the_table_and_writes_reports(
    model_server: ModelServer, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a suite folder with one case, and settings pointing at the scripted model
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "fruit.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", model_server.api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_server.url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("COLUMNS", "200")  # one line per row
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    get_settings.cache_clear()
    model_server.script(Reply.answer("A lemon."), Reply.answer("A plum."))
    # When it runs twice: once answered right, once wrong
    first = CliRunner().invoke(app, ["eval", "--json", "a.json", "--html", "a.html"])
    second = CliRunner().invoke(app, ["eval", "fruit", "--json", "b.json"])
    get_settings.cache_clear()
    # Then the first passes with its table and reports, the second fails with its reason
    assert first.exit_code == 0, first.output
    assert "fruit/say-lemons" in first.output and "1/1 (100%)" in first.output
    assert json.loads((tmp_path / "a.json").read_text())["total"]["pass_rate"] == 1.0
    assert "say-lemons" in (tmp_path / "a.html").read_text()
    assert second.exit_code == 1
    assert "fruit/say-lemons: answer.contains: missing 'lemon'" in second.output
