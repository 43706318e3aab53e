"""`harness init`: a `.env` written with mode 0600 after the key passed one cheap call at the
(fake) provider; a refused key is one line and the question again (or exit 2 with --yes);
an existing file is kept unless the person says yes; keys are never echoed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from tests.fakes.model_server import ModelServer, Reply

GOOD, BAD = "test-key", "sk-wrong-0123456789"
CLEARED = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL",
           "AGENT_MODEL", "LLM_PROVIDER", "MY_KEY"]  # fmt: skip


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model_server: ModelServer) -> Path:
    """An empty folder as the working directory, the fake model server as both providers."""
    monkeypatch.chdir(tmp_path)
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_server.url)
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.openai_url)
    return tmp_path


def _settings(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_init_refuses_a_bad_key_then_writes_a_private_env(
    folder: Path, model_server: ModelServer
) -> None:
    # Given a provider that accepts only the good key
    model_server.script(Reply.answer("ok"))
    # When a person answers the prompts with a wrong key, then the good one, skipping channels
    answers = "anthropic\n" + f"{BAD}\n" + f"{GOOD}\n" + "\n\n"
    result = CliRunner().invoke(app, ["init"], input=answers)
    # Then one line said the key was refused, and .env holds the good key, mode 0600
    assert result.exit_code == 0, result.output
    refused = [line for line in result.output.splitlines() if "refused this key" in line]
    assert len(refused) == 1 and "401" in refused[0], result.output
    env = folder / ".env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    written = _settings(env)
    assert written["LLM_PROVIDER"] == "anthropic" and written["ANTHROPIC_API_KEY"] == GOOD
    assert len(written["HARNESS_API_KEY"]) >= 32
    assert "TELEGRAM_BOT_TOKEN" not in written
    # And neither key was ever echoed
    assert GOOD not in result.output and BAD not in result.output, result.output


def test_init_without_prompts_exits_2_on_a_refused_key_and_writes_nothing(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a wrong key in the variable a script names
    monkeypatch.setenv("MY_KEY", BAD)
    # When init runs without prompts
    result = CliRunner().invoke(app, ["init", "--provider", "openai", "--api-key-env", "MY_KEY",
                                      "--yes"])  # fmt: skip
    # Then it exits 2 with one line, and no .env exists
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "error: openai refused this key (HTTP 401); check OPENAI_API_KEY"
    ], result.output
    assert not (folder / ".env").exists()


def test_init_with_yes_writes_the_key_from_the_environment_and_a_channel(
    folder: Path, model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the key and a Telegram token in the environment, and an old .env
    model_server.script(Reply.answer("ok"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", GOOD)
    monkeypatch.setenv("TG", "123:abc")
    (folder / ".env").write_text("OLD=1\n")
    # When init runs without prompts
    result = CliRunner().invoke(app, ["init", "--yes", "--telegram-token-env", "TG"])
    # Then the file is replaced: the key, the token, polling (no public URL needed)
    assert result.exit_code == 0, result.output
    written = _settings(folder / ".env")
    assert written["ANTHROPIC_API_KEY"] == GOOD and "OLD" not in written
    assert written["TELEGRAM_BOT_TOKEN"] == "123:abc" and written["TELEGRAM_MODE"] == "polling"
    assert stat.S_IMODE((folder / ".env").stat().st_mode) == 0o600


def test_init_keeps_an_existing_env_unless_confirmed(folder: Path) -> None:
    # Given an existing .env
    (folder / ".env").write_text("OLD=1\n")
    # When the person answers no to replacing it
    result = CliRunner().invoke(app, ["init"], input="n\n")
    # Then nothing changed, and no model call was made
    assert result.exit_code == 1, result.output
    assert (folder / ".env").read_text() == "OLD=1\n"
