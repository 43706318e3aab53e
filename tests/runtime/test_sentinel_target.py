"""Reading the Sentinel settings: where the fleet looks for its master, what Celery's broker
is given, and what a sidecar child inherits. No Sentinel is contacted here."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigurationError
from harness.runtime.sentinel import sentinel_target
from harness.settings import Settings
from harness.sidecar.environment import child_environment


def _settings(tmp_path: Path, **fields: object) -> Settings:
    return Settings(_env_file=None, agent_workspace=tmp_path, **fields)  # type: ignore[call-arg]


def test_no_sentinels_means_no_sentinel_target(tmp_path: Path) -> None:
    assert sentinel_target(_settings(tmp_path)) is None
    assert sentinel_target(_settings(tmp_path, redis_sentinels=" , ")) is None


def test_sentinel_target_reads_hosts_master_and_passwords(tmp_path: Path) -> None:
    # Given three Sentinels, a master name and both passwords
    settings = _settings(
        tmp_path,
        redis_sentinels="10.0.0.1:26379, 10.0.0.2:26380,[::1]:26381",
        redis_sentinel_master="mymaster",
        redis_password="p@ss:word",
        redis_sentinel_password="sentinel-pw",
    )
    # When they are read
    target = sentinel_target(settings)
    # Then every Sentinel is listed, and Celery's broker URL names each of them with the
    # master's password quoted, and the master's name goes in the transport options
    assert target is not None
    assert target.sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26380), ("::1", 26381))
    assert target.master == "mymaster"
    assert target.broker_url().split(";") == [
        "sentinel://:p%40ss%3Aword@10.0.0.1:26379/0",
        "sentinel://:p%40ss%3Aword@10.0.0.2:26380/0",
        "sentinel://:p%40ss%3Aword@[::1]:26381/0",
    ]
    options = target.broker_options()
    assert options["master_name"] == "mymaster"
    assert options["sentinel_kwargs"]["password"] == "sentinel-pw"
    # and the description (for doctor and logs) carries no password
    assert "word" not in target.describe() and "sentinel-pw" not in target.describe()


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"redis_sentinels": "10.0.0.1:26379"}, "REDIS_SENTINEL_MASTER"),
        ({"redis_sentinels": "10.0.0.1", "redis_sentinel_master": "m"}, "not host:port"),
        ({"redis_sentinels": "h:99999", "redis_sentinel_master": "m"}, "not host:port"),
        ({"redis_sentinels": ":26379", "redis_sentinel_master": "m"}, "not host:port"),
    ],
)
def test_malformed_sentinel_settings_are_refused_in_one_line(
    tmp_path: Path, fields: dict[str, str], expected: str
) -> None:
    with pytest.raises(ConfigurationError, match=expected) as caught:
        sentinel_target(_settings(tmp_path, **fields))
    assert "\n" not in str(caught.value)


def test_sidecar_child_finds_the_bus_through_the_sentinels(tmp_path: Path) -> None:
    # Given a fleet on Sentinel with a master password
    settings = _settings(
        tmp_path, redis_sentinels="h1:26379,h2:26379", redis_sentinel_master="mymaster",
        redis_password="master-pw",
    )  # fmt: skip
    # When a sidecar child's environment is built (there is no REDIS_URL to give it)
    env = child_environment(settings, "", {"PATH": "/usr/bin", "REDIS_PASSWORD": "stale"})
    # Then it gets the Sentinel settings and the master's password, and no REDIS_URL
    assert env["REDIS_SENTINELS"] == "h1:26379,h2:26379"
    assert env["REDIS_SENTINEL_MASTER"] == "mymaster"
    assert env["REDIS_PASSWORD"] == "master-pw"
    assert "REDIS_URL" not in env and "REDIS_SENTINEL_PASSWORD" not in env
