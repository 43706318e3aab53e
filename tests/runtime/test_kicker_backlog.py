"""`CeleryKicker.backlog` on a real Redis: how many kicks wait in a queue, asked every second by
the scheduler, without opening a connection per look."""

from __future__ import annotations

import redis

from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.kicker import Kick


def _connections(client: redis.Redis) -> int:
    return int(client.info("stats")["total_connections_received"])


def test_looking_at_an_idle_queue_again_opens_no_new_connection(
    redis_url: str, redis_client: redis.Redis
) -> None:
    # Given a kicker that looked once at a queue with nothing in it (an idle fleet's)
    configure(redis_url)
    kicker = CeleryKicker()
    assert kicker.backlog("idle-q") == 0
    before = _connections(redis_client)
    # When it looks five times more, as the scheduler does every second
    seen = [kicker.backlog("idle-q") for _ in range(5)]
    # Then each look says 0, on the connections it already had
    assert seen == [0] * 5
    assert _connections(redis_client) - before == 0, "each look opened new connections"


def test_the_backlog_counts_the_kicks_waiting(redis_url: str, redis_client: redis.Redis) -> None:
    # Given two kicks sent to a queue
    configure(redis_url)
    kicker = CeleryKicker()
    kicker.kick(Kick("r1", "busy-q", 1))
    kicker.kick(Kick("r2", "busy-q", 2))
    # When the backlog is asked for, Then both are counted
    assert kicker.backlog("busy-q") == 2
