"""A Redis reached over a UNIX socket: redis-py's `unix://` URL, translated for Celery."""

from __future__ import annotations

from kombu import Connection

from harness.runtime.celery_app import kombu_url


def test_unix_socket_url_becomes_kombus_redis_socket_url() -> None:
    assert kombu_url("unix:///run/redis/redis.sock") == "redis+socket:///run/redis/redis.sock"
    assert (
        kombu_url("unix://:s3cret@/run/r.sock?db=2")
        == "redis+socket://:s3cret@/run/r.sock?virtual_host=2"
    )
    assert kombu_url("unix:///run/r.sock?password=p%2Fq") == "redis+socket://:p%2Fq@/run/r.sock"


def test_tcp_urls_pass_unchanged_and_kombu_loads_the_socket_transport() -> None:
    assert kombu_url("redis://h:6379/0") == "redis://h:6379/0"
    assert Connection(kombu_url("unix:///run/r.sock")).transport_cls == "redis"
