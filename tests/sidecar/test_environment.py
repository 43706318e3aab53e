"""The process that runs agent-written code gets no secrets, but keeps the bus."""

from __future__ import annotations

from pathlib import Path

from harness.settings import Settings
from harness.sidecar.environment import child_environment


def test_child_environment_drops_secrets_and_keeps_the_bus(tmp_path: Path) -> None:
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

    # When the sidecar child's environment is built
    env = child_environment(settings, "redis://:pw@localhost:6379/0", parent)

    # Then no credential is left, unknown variables are not passed, the bus URL is
    assert env["REDIS_URL"] == "redis://:pw@localhost:6379/0"
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/home/me"
    leaked = [name for name in parent if name in env and parent[name] == env[name]]
    assert sorted(leaked) == ["HOME", "PATH"], leaked
    assert env["AGENT_WORKSPACE"] == str(tmp_path.resolve())
    assert env["HARNESS_KEY_PREFIX"] == settings.harness_key_prefix
