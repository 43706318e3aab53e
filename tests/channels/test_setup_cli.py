"""`harness setup <channel>` for the built-in channels and a plug-in's, and the listener
processes `harness up` adds."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr
from typer.testing import CliRunner

from channels import registry as channel_registry
from channels.telegram.channel import TelegramChannel
from channels.telegram.settings import TelegramSettings
from harness.cli import app
from harness.commands.setup import extra_processes
from tests.channels.conftest import PUBLIC_URL, TELEGRAM_SECRET
from tests.fakes.channel_package import ECHO_REPORT, installed_channels
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

CHANNEL_VARIABLES = [
    "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_ALLOWED_CHATS", "TELEGRAM_MODE",
    "TELEGRAM_API_BASE_URL", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN",
    "SLACK_ALLOWED_CHANNELS", "SLACK_API_BASE_URL", "PUBLIC_URL", "AGENT_NAME",
]  # fmt: skip


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """No channel settings from the environment or a .env file, and no cached channels."""
    monkeypatch.chdir(tmp_path)
    for name in CHANNEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    channel_registry.reset()
    yield monkeypatch
    channel_registry.reset()


def use_telegram(env: pytest.MonkeyPatch, fake: FakeTelegramApi, **extra: str) -> None:
    env.setenv("TELEGRAM_BOT_TOKEN", fake.token)
    env.setenv("TELEGRAM_API_BASE_URL", fake.base_url)
    env.setenv("TELEGRAM_WEBHOOK_SECRET", TELEGRAM_SECRET)
    for name, value in extra.items():
        env.setenv(name, value)


def test_setup_telegram_sets_the_webhook_and_prints_telegrams_answer(
    environment: pytest.MonkeyPatch, telegram_api: FakeTelegramApi
) -> None:
    use_telegram(environment, telegram_api, PUBLIC_URL=PUBLIC_URL)
    result = CliRunner().invoke(app, ["setup", "telegram"])
    assert result.exit_code == 0, result.output
    assert "Webhook was set" in result.output
    webhook = telegram_api.webhook
    assert webhook is not None
    assert webhook["url"] == f"{PUBLIC_URL}/webhooks/telegram"
    assert webhook["secret_token"] == TELEGRAM_SECRET
    assert webhook["allowed_updates"] == ["message", "callback_query"]


def test_setup_telegram_without_a_public_url_says_what_is_missing(
    environment: pytest.MonkeyPatch, telegram_api: FakeTelegramApi
) -> None:
    use_telegram(environment, telegram_api)
    result = CliRunner().invoke(app, ["setup", "telegram"])
    assert result.exit_code == 2
    assert "PUBLIC_URL" in result.output
    assert telegram_api.webhook is None


def test_setup_telegram_in_polling_mode_removes_the_webhook(
    environment: pytest.MonkeyPatch, telegram_api: FakeTelegramApi
) -> None:
    use_telegram(environment, telegram_api, TELEGRAM_MODE="polling")
    result = CliRunner().invoke(app, ["setup", "telegram"])
    assert result.exit_code == 0, result.output
    assert [c.method for c in telegram_api.calls] == ["deleteWebhook", "setMyCommands"]


def test_setup_telegram_without_a_token_fails_clearly(environment: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["setup", "telegram"])
    assert result.exit_code == 2
    assert "TELEGRAM_BOT_TOKEN" in result.output


def _manifest(output: str) -> dict[str, object]:
    return dict(yaml.safe_load(output[output.index("display_information:") :]))


def test_setup_slack_prints_the_manifest_with_the_request_url(
    environment: pytest.MonkeyPatch, slack_api: FakeSlackApi
) -> None:
    environment.setenv("SLACK_BOT_TOKEN", slack_api.token)
    environment.setenv("SLACK_API_BASE_URL", slack_api.base_url)
    environment.setenv("SLACK_SIGNING_SECRET", "abc")
    environment.setenv("PUBLIC_URL", PUBLIC_URL)
    result = CliRunner().invoke(app, ["setup", "slack"])
    assert result.exit_code == 0, result.output
    assert "token OK" in result.output
    settings = _manifest(result.output)["settings"]
    assert settings["event_subscriptions"]["request_url"] == f"{PUBLIC_URL}/webhooks/slack"  # type: ignore[index]
    # And the chat commands come as one slash command named for the agent, to their route
    (slash,) = _manifest(result.output)["features"]["slash_commands"]  # type: ignore[index]
    assert slash["command"] == "/harness", slash
    assert slash["url"] == f"{PUBLIC_URL}/webhooks/slack/commands", slash
    assert "commands" in _manifest(result.output)["oauth_config"]["scopes"]["bot"]  # type: ignore[index]


def test_setup_slack_before_the_app_exists_prints_the_manifest_to_create_it(
    environment: pytest.MonkeyPatch,
) -> None:
    result = CliRunner().invoke(app, ["setup", "slack"])
    assert result.exit_code == 0, result.output
    assert "SLACK_BOT_TOKEN is not set" in result.output
    scopes = _manifest(result.output)["oauth_config"]["scopes"]["bot"]  # type: ignore[index]
    assert "chat:write" in scopes


def test_setup_slack_with_an_app_token_prints_a_socket_mode_manifest(
    environment: pytest.MonkeyPatch,
) -> None:
    environment.setenv("SLACK_APP_TOKEN", "xapp-1-A1-1-abc")
    result = CliRunner().invoke(app, ["setup", "slack"])
    assert result.exit_code == 0, result.output
    settings = _manifest(result.output)["settings"]
    assert settings["socket_mode_enabled"] is True  # type: ignore[index]
    assert "request_url" not in settings["event_subscriptions"]  # type: ignore[index]


def test_extra_processes_add_a_listener_per_channel_without_webhooks(
    environment: pytest.MonkeyPatch,
) -> None:
    python = f"exec {shlex.quote(sys.executable)}"
    assert extra_processes() == {}
    environment.setenv("TELEGRAM_BOT_TOKEN", "42:abc")
    environment.setenv("TELEGRAM_MODE", "polling")
    environment.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    environment.setenv("SLACK_APP_TOKEN", "xapp-1-A1-1-abc")
    channel_registry.reset()
    assert extra_processes() == {
        "slack-listener": f"{python} -m harness.cli poll slack --restart",
        "telegram-listener": f"{python} -m harness.cli poll telegram --restart",
    }


def test_extra_processes_start_no_listener_for_empty_tokens(
    environment: pytest.MonkeyPatch,
) -> None:
    # Given the tokens of a copied .env.example: present but empty
    environment.setenv("TELEGRAM_BOT_TOKEN", "")
    environment.setenv("TELEGRAM_MODE", "polling")
    environment.setenv("SLACK_BOT_TOKEN", "")
    environment.setenv("SLACK_APP_TOKEN", "")
    # Then no listener starts
    assert extra_processes() == {}


def test_extra_processes_start_no_listener_for_a_blank_token_the_settings_kept(
    environment: pytest.MonkeyPatch,
) -> None:
    # Given a Telegram channel built from settings that kept a blank token as a value
    settings = TelegramSettings(
        _env_file=None,  # type: ignore[call-arg]
        telegram_bot_token=SecretStr(" "),
        telegram_mode="polling",
    )
    channel_registry.register("telegram", lambda: TelegramChannel(settings))
    # Then it is treated as unset: no listener
    assert extra_processes() == {}


def test_extra_processes_add_nothing_for_webhook_channels(
    environment: pytest.MonkeyPatch,
) -> None:
    environment.setenv("TELEGRAM_BOT_TOKEN", "42:abc")
    environment.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    assert extra_processes() == {}


def test_setup_prints_a_channel_plugins_report_before_its_credentials_exist(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given an installed package adding an `echo` channel, not configured
    with installed_channels(tmp_path / "site", echo="ECHO_PLUGIN"):
        # When it is set up
        result = CliRunner().invoke(app, ["setup", "echo"])
    # Then the command prints what the plug-in says to do first
    assert result.exit_code == 0, result.output
    assert result.output.strip() == ECHO_REPORT


def test_setup_help_lists_the_installed_channels(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given an installed package adding an `echo` channel
    with installed_channels(tmp_path / "site", echo="ECHO_PLUGIN"):
        # When the help of `harness setup` is shown
        result = CliRunner().invoke(app, ["setup", "--help"])
    # Then it names every channel that can be set up, the plug-in's included
    assert result.exit_code == 0, result.output
    listed = next(line for line in result.output.splitlines() if "Channels:" in line)
    assert {"echo,", "slack,", "telegram."} <= set(listed.split()), listed


def test_setup_an_unknown_channel_is_one_line_naming_the_known_ones(
    environment: pytest.MonkeyPatch,
) -> None:
    # When a channel nobody installed is set up
    result = CliRunner().invoke(app, ["setup", "discord"])
    # Then one line says so and lists the channels there are, with exit code 2
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert "unknown channel 'discord'" in lines[0] and "slack, telegram" in lines[0], lines
