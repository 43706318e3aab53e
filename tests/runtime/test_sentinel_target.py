"""Reading the Sentinel settings: where the fleet looks for its master, what Celery's broker
is given, and what the sidecar's executor inherits. No Sentinel is contacted here."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
import redis.asyncio
import redis.sentinel

from harness.errors import ConfigurationError
from harness.runtime import celery_app
from harness.runtime.assembly import build_runtime
from harness.runtime.sentinel import sentinel_target
from harness.settings import Settings
from harness.sidecar.environment import executor_environment


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


def test_sidecar_executor_finds_the_bus_through_the_sentinels(tmp_path: Path) -> None:
    # Given a fleet on Sentinel with a master password
    settings = _settings(
        tmp_path, redis_sentinels="h1:26379,h2:26379", redis_sentinel_master="mymaster",
        redis_password="master-pw",
    )  # fmt: skip
    # When the sidecar executor's environment is built (there is no REDIS_URL to give it)
    env = executor_environment(settings, "", {"PATH": "/usr/bin", "REDIS_PASSWORD": "stale"})
    # Then it gets the Sentinel settings and the master's password, and no REDIS_URL
    assert env["REDIS_SENTINELS"] == "h1:26379,h2:26379"
    assert env["REDIS_SENTINEL_MASTER"] == "mymaster"
    assert env["REDIS_PASSWORD"] == "master-pw"
    assert "REDIS_URL" not in env and "REDIS_SENTINEL_PASSWORD" not in env


def _tls_settings(tmp_path: Path, **fields: object) -> Settings:
    return _settings(
        tmp_path, redis_sentinels="10.0.0.1:26379,10.0.0.2:26379",
        redis_sentinel_master="mymaster", redis_sentinel_password="sentinel-pw",
        redis_password="master-pw", **fields,
    )  # fmt: skip


def test_sentinel_tls_reaches_sentinels_master_and_celery_broker(tmp_path: Path) -> None:
    # Given TLS with a CA file and a client certificate
    settings = _tls_settings(
        tmp_path, redis_sentinel_tls=True, redis_sentinel_tls_ca_certs=tmp_path / "ca.pem",
        redis_sentinel_tls_certfile=tmp_path / "client.pem",
        redis_sentinel_tls_keyfile=tmp_path / "client.key",
    )  # fmt: skip
    target = sentinel_target(settings)
    assert target is not None
    expected_ssl = {
        "ssl_cert_reqs": "required", "ssl_check_hostname": True,
        "ssl_ca_certs": str(tmp_path / "ca.pem"), "ssl_certfile": str(tmp_path / "client.pem"),
        "ssl_keyfile": str(tmp_path / "client.key"),
    }  # fmt: skip
    # When Celery's broker is configured from it: kombu gets TLS to the master
    # (`broker_use_ssl`) and to the Sentinels (`sentinel_kwargs`), and the Sentinels' password
    assert target.broker_use_ssl() == expected_ssl
    sentinel_kwargs = target.broker_options()["sentinel_kwargs"]
    assert sentinel_kwargs == {
        "socket_timeout": 5.0,
        "password": "sentinel-pw",
        "ssl": True,
        **expected_ssl,
    }
    # and the runtime's clients connect to Sentinels and master with TLS
    client = target.sync_client()
    pool = client.connection_pool
    assert isinstance(pool, redis.sentinel.SentinelConnectionPool)
    assert issubclass(pool.connection_class, redis.SSLConnection)
    assert pool.connection_kwargs["ssl_ca_certs"] == str(tmp_path / "ca.pem")
    assert pool.connection_kwargs["password"] == "master-pw"
    for sentinel in pool.sentinel_manager.sentinels:
        kwargs = sentinel.connection_pool.connection_kwargs
        assert issubclass(sentinel.connection_pool.connection_class, redis.SSLConnection)
        assert kwargs["ssl_certfile"] == str(tmp_path / "client.pem")
    aclient = target.async_client(4, 1.0)
    apool = aclient.connection_pool
    assert issubclass(apool.connection_class, redis.asyncio.SSLConnection)
    assert apool.connection_kwargs["ssl_keyfile"] == str(tmp_path / "client.key")


def test_celery_app_takes_sentinel_tls_options(tmp_path: Path) -> None:
    # Given a runtime built on TLS Sentinels, then one on a plain Redis URL, each kicking
    # (its Celery kicker is built, and Celery pointed at its broker, on its first kick)
    settings = _tls_settings(tmp_path, redis_sentinel_tls=True)
    build_runtime(settings).kicker.script_template()
    assert celery_app.app.conf.broker_use_ssl == {
        "ssl_cert_reqs": "required",
        "ssl_check_hostname": True,
    }
    assert celery_app.app.conf.broker_transport_options["sentinel_kwargs"]["ssl"] is True
    build_runtime(_settings(tmp_path, redis_url="redis://127.0.0.1:1/0")).kicker.script_template()
    # Then the TLS options were the Sentinel fleet's only
    assert celery_app.app.conf.broker_use_ssl is False


def test_no_tls_means_plain_connections(tmp_path: Path) -> None:
    target = sentinel_target(_tls_settings(tmp_path))
    assert target is not None
    assert target.broker_use_ssl() is None
    assert "ssl" not in target.broker_options()["sentinel_kwargs"]
    pool = target.sync_client().connection_pool
    assert not issubclass(pool.connection_class, redis.SSLConnection)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"redis_sentinel_tls_ca_certs": "ca.pem"}, "REDIS_SENTINEL_TLS is not"),
        (
            {"redis_sentinel_tls": True, "redis_sentinel_tls_certfile": "client.pem"},
            "go together",
        ),
    ],
)
def test_inconsistent_tls_settings_are_refused_in_one_line(
    tmp_path: Path, fields: dict[str, object], expected: str
) -> None:
    with pytest.raises(ConfigurationError, match=expected) as caught:
        sentinel_target(_tls_settings(tmp_path, **fields))
    assert "\n" not in str(caught.value)


def test_sidecar_executor_gets_the_tls_settings_as_absolute_paths(tmp_path: Path) -> None:
    settings = _tls_settings(
        tmp_path, redis_sentinel_tls=True, redis_sentinel_tls_ca_certs=Path("ca.pem"),
        redis_sentinel_tls_check_hostname=False,
    )  # fmt: skip
    env = executor_environment(settings, "", {"PATH": "/usr/bin"})
    assert env["REDIS_SENTINEL_TLS"] == "true"
    assert env["REDIS_SENTINEL_TLS_CHECK_HOSTNAME"] == "false"
    assert env["REDIS_SENTINEL_TLS_CA_CERTS"] == str(Path("ca.pem").resolve())
    assert "REDIS_SENTINEL_TLS_CERTFILE" not in env
    # and reads them back as the same target
    child = Settings(_env_file=None, **{k.lower(): v for k, v in env.items()})  # type: ignore[call-arg]
    child_target = sentinel_target(child)
    assert child_target is not None and child_target.tls is not None
    assert child_target.tls.check_hostname is False
