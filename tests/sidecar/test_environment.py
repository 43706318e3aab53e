"""The process that imports agent-written code gets no credential, not even the bus; the
trusted executor gets the bus and no other secret."""

from __future__ import annotations

from pathlib import Path

from harness.settings import Settings
from harness.sidecar.environment import executor_environment, function_environment


def test_executor_environment_drops_secrets_and_keeps_the_bus(tmp_path: Path) -> None:
    # Given a parent environment full of credentials
    parent = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "ANTHROPIC_API_KEY": "sk-ant",
        "OPENAI_API_KEY": "sk-oa",
        "TELEGRAM_BOT_TOKEN": "123:abc",
        "TELEGRAM_WEBHOOK_SECRET": "s",
        "SLACK_SIGNING_SECRET": "s",
        "HARNESS_API_KEY": "bearer",
        "HARNESS_DB_PASSWORD": "pw",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "GITHUB_TOKEN": "gh",
        "SOME_RANDOM_THING": "x",
        "HARNESS_KEY_PREFIX": "mine",
    }
    settings = Settings(_env_file=None, agent_workspace=tmp_path)  # type: ignore[call-arg]

    # When the sidecar executor's environment is built
    env = executor_environment(settings, "redis://:pw@localhost:6379/0", parent)

    # Then no credential is left, unknown variables are not passed, the bus URL is
    assert env["REDIS_URL"] == "redis://:pw@localhost:6379/0"
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/home/me"
    leaked = [name for name in parent if name in env and parent[name] == env[name]]
    assert sorted(leaked) == ["HOME", "PATH"], leaked
    assert env["AGENT_WORKSPACE"] == str(tmp_path.resolve())
    assert env["HARNESS_KEY_PREFIX"] == settings.harness_key_prefix


def test_function_environment_holds_no_way_to_the_bus(tmp_path: Path) -> None:
    # Given a parent environment with the bus, Sentinel passwords and harness variables
    parent = {
        "PATH": "/usr/bin",
        "REDIS_URL": "redis://:pw@localhost:6379/0",
        "REDIS_PASSWORD": "pw",
        "REDIS_SENTINEL_PASSWORD": "spw",
        "REDIS_SENTINELS": "h1:26379",
        "HARNESS_STATE_DIR": "/srv/state",
        "HARNESS_TEST_CANARY": "canary",
        "SIDECAR_QUEUE": "sidecar",
    }
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, agent_workspace=tmp_path, redis_url="redis://:pw@localhost:6379/0"
    )

    # When the environment of a process that imports functions/ is built
    env = function_environment(settings, parent)

    # Then nothing in it names the bus or the fleet's state, and no value holds the password
    assert not [name for name in env if name.startswith(("REDIS", "HARNESS"))], env
    assert not [value for value in env.values() if "pw" in value], env
    assert env["PATH"] == "/usr/bin"
    assert env["AGENT_WORKSPACE"] == str(tmp_path.resolve())
