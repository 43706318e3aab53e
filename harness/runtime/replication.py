"""Acknowledging an accepted event only once replicas hold it (`REDIS_WAIT_REPLICAS`).

Redis replicates asynchronously: a master that dies right after it accepted an event may take
that event with it, and a replica promoted by Sentinel never saw it. `WAIT n timeout` blocks
until `n` replicas acknowledge every write made earlier *on the same connection*, so the WAIT
goes in one pipeline with the write it guards. A duplicate event writes nothing, so its WAIT
would guard nothing; then a tiny write to the replication mark goes first: replication is one
ordered stream, so once replicas hold the mark they hold the original acceptance too.
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
from redis.commands.core import AsyncScript, Script

from harness.errors import ReplicationTimeoutError

MARK_TTL_MS = 60_000


def publish_replicated(
    client: redis.Redis,
    script: Script,
    args: list[Any],
    *,
    replicas: int,
    timeout_ms: int,
    mark_key: str,
) -> list[Any]:
    """Run the publish `script` with `args`, then WAIT for `replicas` on that connection.

    Returns the script's result. Raises `ReplicationTimeoutError` when fewer replicas
    acknowledged within `timeout_ms` (the event is accepted on the master all the same, and
    publishing it again is a safe duplicate)."""
    pipe = client.pipeline(transaction=False)
    script(args=args, client=pipe)
    pipe.wait(replicas, timeout_ms)
    out, acked = pipe.execute()
    if not out[0]:
        acked = _mark_and_wait(client.pipeline(transaction=False), mark_key, replicas, timeout_ms)
    _check(int(acked), replicas, timeout_ms)
    return list(out)


async def publish_replicated_async(
    client: redis.asyncio.Redis,
    script: AsyncScript,
    args: list[Any],
    *,
    replicas: int,
    timeout_ms: int,
    mark_key: str,
) -> list[Any]:
    """`publish_replicated` on an async client."""
    pipe = client.pipeline(transaction=False)
    await script(args=args, client=pipe)
    pipe.wait(replicas, timeout_ms)
    out, acked = await pipe.execute()
    if not out[0]:
        again = client.pipeline(transaction=False)
        again.set(mark_key, "1", px=MARK_TTL_MS)
        again.wait(replicas, timeout_ms)
        _, acked = await again.execute()
    _check(int(acked), replicas, timeout_ms)
    return list(out)


def _mark_and_wait(pipe: Any, mark_key: str, replicas: int, timeout_ms: int) -> int:
    pipe.set(mark_key, "1", px=MARK_TTL_MS)
    pipe.wait(replicas, timeout_ms)
    _, acked = pipe.execute()
    return int(acked)


def _check(acked: int, replicas: int, timeout_ms: int) -> None:
    if acked < replicas:  # the caller logs it, once
        raise ReplicationTimeoutError(
            f"{acked} of {replicas} replica(s) acknowledged within {timeout_ms} ms"
        )
