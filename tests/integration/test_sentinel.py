"""Redis Sentinel: clients find the master through the Sentinels, `harness doctor` names it,
`REDIS_WAIT_REPLICAS` holds the web's answer until a replica has the message, and the fleet
survives its master being killed mid-load."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.commands.doctor import check_fleet
from harness.errors import ReplicationTimeoutError
from harness.runtime import get_runtime, set_runtime
from harness.runtime.assembly import build_runtime
from harness.runtime.bus import publish_async
from harness.settings import Settings, get_settings
from harness.web import create_app
from tests.integration.sentinel_cluster import MASTER_NAME, SentinelCluster

pytestmark = pytest.mark.integration

API_KEY = "sentinel-test-key"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SentinelCluster]:
    """A master, a replica and three Sentinels for one test."""
    started = SentinelCluster(tmp_path / "cluster").start()
    try:
        yield started
    finally:
        started.stop()


def _settings(cluster: SentinelCluster, tmp_path: Path, **overrides: object) -> Settings:
    fields: dict[str, object] = {
        "redis_sentinels": cluster.sentinels_setting,
        "redis_sentinel_master": MASTER_NAME,
        "harness_key_prefix": "sentineltest",
        "agent_workspace": tmp_path / "workspace",
        "harness_api_key": API_KEY,
        **overrides,
    }
    return Settings(**fields)  # type: ignore[arg-type]


def test_runtime_through_sentinel_writes_to_the_master(
    cluster: SentinelCluster, tmp_path: Path
) -> None:
    # Given a runtime built from REDIS_SENTINELS and REDIS_SENTINEL_MASTER only
    runtime = build_runtime(_settings(cluster, tmp_path))
    # When it writes with its sync and its async client
    runtime.redis.set("sentinel-test:sync", "1")

    async def write_async() -> None:
        assert runtime.aredis is not None
        await runtime.aredis.set("sentinel-test:async", "2")
        await runtime.aclose()

    asyncio.run(write_async())
    runtime.redis.close()
    # Then both writes are on the master the Sentinels name
    master = cluster.client("master")
    assert master.get("sentinel-test:sync") == "1", "the sync client did not write to the master"
    assert master.get("sentinel-test:async") == "2", "the async client did not write to the master"


def test_doctor_names_the_master_the_sentinels_resolved(
    cluster: SentinelCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the environment of a fleet on Sentinel
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("REDIS_SENTINELS", cluster.sentinels_setting)
    monkeypatch.setenv("REDIS_SENTINEL_MASTER", MASTER_NAME)
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    get_settings.cache_clear()
    set_runtime(None)
    try:
        # When doctor checks the fleet
        checks = {check.name: check for check in check_fleet()}
    finally:
        get_runtime().redis.close()
        get_settings.cache_clear()
        set_runtime(None)
    # Then its Redis line names the master's address and the Sentinels it asked
    redis_check = checks["redis"]
    assert redis_check.status == "ok", redis_check
    assert f"127.0.0.1:{cluster.ports['master']}" in redis_check.detail, redis_check.detail
    assert "sentinel://" in redis_check.detail, redis_check.detail


def _event(event_id: str) -> dict[str, object]:
    return {"id": event_id, "name": "test/replicated", "data": {"n": 1}}


def test_wait_replicas_answers_202_with_a_replica_and_503_without(
    cluster: SentinelCluster, tmp_path: Path
) -> None:
    # Given the web on Sentinel, holding each 2xx until one replica has the event
    settings = _settings(cluster, tmp_path, redis_wait_replicas=1, redis_wait_timeout_ms=300)
    runtime = build_runtime(settings)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with TestClient(create_app(lambda: runtime, settings)) as client:
        # When an event is posted while the replica is up
        first = client.post("/api/events", json=_event("ev-with-replica"), headers=headers)
        # Then it is accepted, and the replica holds it already
        assert first.status_code == 202, first.text
        on_replica = cluster.client("replica").xrange("sentineltest:events")
        assert any("ev-with-replica" in str(fields) for _id, fields in on_replica), (
            "the 200 came before the replica held the event"
        )
        # When the replica is gone and another event is posted
        cluster.stop_server("replica")
        second = client.post("/api/events", json=_event("ev-no-replica"), headers=headers)
        # Then the web answers 503 with Retry-After: the platform will send it again
        assert second.status_code == 503, second.text
        assert second.headers.get("Retry-After"), second.headers
        # And a redelivery (a duplicate now) is not acknowledged either until a replica has it
        again = client.post("/api/events", json=_event("ev-no-replica"), headers=headers)
        assert again.status_code == 503, again.text
        client.portal.call(runtime.aclose)  # type: ignore[union-attr]
    runtime.redis.close()


def test_wait_replicas_raises_for_a_duplicate_that_no_replica_holds(
    cluster: SentinelCluster, tmp_path: Path
) -> None:
    # Given a runtime that waits for one replica, and an event accepted while none runs
    runtime = build_runtime(
        _settings(cluster, tmp_path, redis_wait_replicas=1, redis_wait_timeout_ms=200)
    )
    cluster.stop_server("replica")

    async def publish_twice() -> list[str]:
        outcomes = []
        for _ in range(2):
            try:
                result = await publish_async(_event("ev-dup"), runtime=runtime)
                outcomes.append("duplicate" if result.duplicate else "accepted")
            except ReplicationTimeoutError:
                outcomes.append("timeout")
        await runtime.aclose()
        return outcomes

    # When it is published twice
    outcomes = asyncio.run(publish_twice())
    # Then neither publish claims a replica has it: the first is accepted on the master only,
    # the second (a duplicate, which writes nothing) still waits for a replica and times out
    assert outcomes == ["timeout", "timeout"], outcomes
    assert cluster.client("master").xlen("sentineltest:events") == 1
    runtime.redis.close()
