"""The broker's Redis transports let Celery's consumer close a connection Redis dropped.

The state is the one a worker met when its Redis master was killed: a kick delivered and not
yet acknowledged on the consuming channel, whose `BRPOP` is in flight, and another on a
second channel. Celery's consumer then collects the connection and closes it. With kombu's
own transport the close raised `AttributeError` (the transport's client was gone), which
Celery takes for a bug and stops the worker on.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any

import pytest
import redis
from kombu import Connection
from kombu.common import ignore_errors

from harness.fleet.embedded_redis import EmbeddedRedis
from harness.runtime import broker_transport, celery_app  # celery_app installs the transports


def _stranded(url: str, server: EmbeddedRedis) -> tuple[Connection, list[Any]]:
    """A connection whose Redis has just gone, after Celery's consumer collected it, and
    its two channels."""
    conn = Connection(url)
    consuming = conn.SimpleQueue("kicks")  # on the default channel
    consuming.put({"kick": 1})
    consuming.get(timeout=2)  # delivered, not acknowledged
    other = conn.SimpleQueue("control", channel=conn.channel())
    other.put({"kick": 2})
    other.get(timeout=2)
    with contextlib.suppress(socket.timeout):
        conn.drain_events(timeout=0.05)  # leaves a BRPOP in flight on the default channel
    server.stop()
    with contextlib.suppress(Exception):  # as Celery's consumer does
        conn.collect(socket_timeout=0.2)
    return conn, [consuming.channel, other.channel]


@pytest.mark.parametrize("scheme", ["redis", "rediss", "sentinel"])
def test_kombu_uses_the_guarded_transports_for_redis_urls(scheme: str) -> None:
    conn = Connection(f"{scheme}://127.0.0.1:1/0", transport_options={"master_name": "m"})

    assert type(conn.transport).__module__ == broker_transport.__name__
    assert conn.as_uri().startswith(f"{scheme}://")


def test_a_connection_redis_dropped_closes_every_channel(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path, persist=False)
    server.start()
    try:
        conn, channels = _stranded(server.url, server)

        ignore_errors(conn, conn.close)  # Celery's close: ignores connection errors only

        assert all(channel.closed for channel in channels)
        # nothing left for kombu to retry at exit (with a traceback, as Redis is down)
        assert not any(channel.qos._on_collect.still_active() for channel in channels)
    finally:
        server.stop()


def test_a_channel_whose_transport_dropped_its_client_fails_as_a_lost_connection(
    tmp_path: Path,
) -> None:
    server = EmbeddedRedis(tmp_path, persist=False)
    server.start()
    conn = Connection(server.url)
    try:
        channel = conn.channel()
        channel.client.ping()
        channel._disconnect_pools()  # as kombu's close does, before handing deliveries back
        conn.transport.client = None  # as kombu's collect does

        with pytest.raises(conn.connection_errors) as raised:
            channel._connparams()

        assert "broker connection is closed" in str(raised.value)
    finally:
        conn.transport.client = conn
        ignore_errors(conn, conn.close)
        server.stop()


def test_a_kick_read_by_the_fleets_app_leaves_no_unacked_record_in_redis(tmp_path: Path) -> None:
    # Given the app pointed at a Redis, as a worker's is
    server = EmbeddedRedis(tmp_path, persist=False)
    server.start()
    saved = dict(celery_app.app.conf.broker_transport_options or {}), celery_app.app.conf.broker_url
    try:
        celery_app.configure(server.url)
        with celery_app.app.connection_for_read() as conn:
            kicks = conn.SimpleQueue("kicks")
            kicks.put({"kick": 1})
            # When a kick is read and not yet acknowledged
            message = kicks.get(timeout=2)
            client = redis.Redis.from_url(server.url)
            # Then kombu wrote no acknowledgement bookkeeping for it (two round trips a kick)
            assert client.exists("unacked", "unacked_index") == 0
            message.ack()
            kicks.close()
    finally:
        celery_app.app.conf.broker_transport_options, celery_app.app.conf.broker_url = saved
        server.stop()
