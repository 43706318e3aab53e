"""Which chunks of each reply are already on the platform, so a retried delivery skips them.

`DeliveryRecords` is the contract, `RedisDeliveryRecords` the Redis implementation,
`MemoryDeliveryRecords` its in-memory twin."""

from __future__ import annotations

from typing import Protocol

import redis

from harness.runtime.bus_errors import redis_errors
from harness.runtime.keys import Keys

DELIVERY_TTL_S = 7 * 86_400


class DeliveryRecords(Protocol):
    """What was posted of each reply. The Redis implementation raises `BusUnavailableError`
    when Redis fails."""

    def posted(self, reply_id: str) -> dict[int, str]:
        """Chunk index -> platform message id, for every chunk of the reply posted so far."""
        ...

    def record(self, reply_id: str, index: int, message_id: str) -> None:
        """Remember that chunk `index` of the reply was posted as `message_id`. Idempotent."""
        ...

    def begin(self, reply_id: str) -> bool:
        """Note that an attempt to deliver the reply starts; True when an earlier attempt
        already started (it may have posted chunks it could not record)."""
        ...


class RedisDeliveryRecords:
    """`DeliveryRecords` as a Redis hash per reply event, chunk index -> platform message id,
    kept for a week after the last chunk. Methods raise `BusUnavailableError` when Redis fails."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._redis = client
        self._keys = keys

    def posted(self, reply_id: str) -> dict[int, str]:
        """Chunk index -> platform message id, for every chunk of the reply posted so far."""
        with redis_errors("read the reply's delivery record"):
            raw = self._redis.hgetall(self._keys.reply_chunks(reply_id))
        return {int(index): str(message_id) for index, message_id in raw.items()}

    def record(self, reply_id: str, index: int, message_id: str) -> None:
        """Remember that chunk `index` of the reply was posted as `message_id`. Idempotent."""
        key = self._keys.reply_chunks(reply_id)
        with redis_errors("record a delivered chunk"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.hset(key, str(index), message_id)
            pipe.expire(key, DELIVERY_TTL_S)
            pipe.execute()

    def begin(self, reply_id: str) -> bool:
        """Note that an attempt to deliver the reply starts; True when an earlier attempt
        already started (it may have posted chunks it could not record)."""
        with redis_errors("mark a delivery as begun"):
            first = self._redis.set(
                self._keys.reply_begun(reply_id), "1", nx=True, ex=DELIVERY_TTL_S
            )
        return not first


class MemoryDeliveryRecords:
    """`DeliveryRecords` in one process's memory, for tests. Records never expire."""

    def __init__(self) -> None:
        self._posted: dict[str, dict[int, str]] = {}
        self._begun: set[str] = set()

    def posted(self, reply_id: str) -> dict[int, str]:
        """See `DeliveryRecords.posted`."""
        return dict(self._posted.get(reply_id, {}))

    def record(self, reply_id: str, index: int, message_id: str) -> None:
        """See `DeliveryRecords.record`."""
        self._posted.setdefault(reply_id, {})[index] = message_id

    def begin(self, reply_id: str) -> bool:
        """See `DeliveryRecords.begin`."""
        again = reply_id in self._begun
        self._begun.add(reply_id)
        return again
