"""Acknowledging an accepted event only once replicas hold it (`REDIS_WAIT_REPLICAS`).

Redis replicates asynchronously: a master that dies right after it accepted an event may take
that event with it, and a replica promoted by Sentinel never saw it. `WAIT n timeout` blocks
until `n` replicas acknowledge every write made earlier *on the same connection*, so the
publisher accepts the event on one dedicated connection and WAITs on that connection. A
duplicate event writes nothing, so its WAIT would guard nothing: a tiny write to the
replication mark goes first. Replication is one ordered stream, so once replicas hold the mark
they hold the original acceptance too.
"""

from __future__ import annotations

import redis.asyncio

from harness.errors import ReplicationTimeoutError

MARK_TTL_MS = 60_000


async def acknowledge(
    connection: redis.asyncio.Redis,
    *,
    wrote: bool,
    replicas: int,
    timeout_ms: int,
    mark_key: str,
) -> None:
    """Return once `replicas` replicas hold every write made so far on `connection` (a
    single-connection client); `wrote` False (a duplicate) writes `mark_key` first.

    Raises `ReplicationTimeoutError` when fewer acknowledged within `timeout_ms`: the writes
    are on the master all the same, and publishing the event again is a safe duplicate."""
    if not wrote:
        await connection.set(mark_key, "1", px=MARK_TTL_MS)
    acked = int(await connection.wait(replicas, timeout_ms))
    if acked < replicas:  # the caller logs it, once
        raise ReplicationTimeoutError(
            f"{acked} of {replicas} replica(s) acknowledged within {timeout_ms} ms"
        )
