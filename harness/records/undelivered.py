"""Replies that could not be delivered in time, kept until they are delivered another way (the
person writes next, or `harness runs redeliver`): a reply is never silently gone.

`UndeliveredReplies` is the contract, `RedisUndeliveredReplies` the Redis implementation,
`MemoryUndeliveredReplies` its in-memory twin."""

from __future__ import annotations

import weakref
from typing import Any, Protocol

import redis
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.events import REPLY_READY, Event
from harness.runtime.bus_errors import redis_errors
from harness.runtime.keys import Keys

REDELIVERS = "harness_redelivers"
"""`channel_meta` key of a redelivered reply: the id of the reply it delivers again, so the
chunks an earlier attempt posted are skipped (the delivery record is keyed by that id)."""


class UndeliveredReply(BaseModel):
    """One reply given up on: the `agent.reply.ready` event, the run that gave up, why, and
    when (ms since the epoch)."""

    model_config = ConfigDict(frozen=True)

    reply_id: str
    run_id: str
    channel: str
    chat_id: str
    event: dict[str, object] = Field(default_factory=dict)
    error: str = ""
    at_ms: int = 0

    def redelivery(self) -> Event:
        """The event that delivers this reply again. Its id derives from the reply and the
        time it was given up, so two redeliveries of the same give-up (the person wrote while
        an operator ran `harness runs redeliver`) are one event to the bus."""
        data = dict(self.event.get("data") or {})  # type: ignore[call-overload]
        meta = dict(data.get("channel_meta") or {})
        meta[REDELIVERS] = self.reply_id
        data["channel_meta"] = meta
        return Event(name=REPLY_READY, id=f"redeliver:{self.reply_id}:{self.at_ms}", data=data)


_ADAPTER = TypeAdapter(UndeliveredReply)


class UndeliveredReplies(Protocol):
    """Replies given up on, by original reply id, kept until discarded. The Redis
    implementation raises `BusUnavailableError` when Redis fails."""

    def record(self, reply: UndeliveredReply) -> None:
        """Keep `reply` (replacing an earlier give-up of the same reply). Idempotent."""
        ...

    def get(self, reply_id: str) -> UndeliveredReply | None:
        """The undelivered reply with this original id, or None."""
        ...

    def all(self) -> list[UndeliveredReply]:
        """Every undelivered reply, oldest first."""
        ...

    def for_chat(self, channel: str, chat_id: str) -> list[UndeliveredReply]:
        """The undelivered replies of one chat, oldest first."""
        ...

    def discard(self, reply_id: str) -> None:
        """Forget a reply (its redelivery was published). Unknown ids are ignored."""
        ...


class RedisUndeliveredReplies:
    """`UndeliveredReplies` as a Redis hash, original reply id -> `UndeliveredReply` as JSON,
    indexed by chat (a set of reply ids per chat), so a chat's turn reads its own replies, not
    every chat's: entries stay until they are discarded after a redelivery was published.
    Replies kept before the index existed are indexed by the first `for_chat` of each process
    that finds the index unmarked. Methods raise `BusUnavailableError` when Redis fails."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._redis = client
        self._keys = keys
        self._key = keys.undelivered()

    def record(self, reply: UndeliveredReply) -> None:
        """Keep `reply` (replacing an earlier give-up of the same reply). Idempotent."""
        with redis_errors("record an undelivered reply"):
            pipe = self._redis.pipeline()
            pipe.hset(self._key, reply.reply_id, _ADAPTER.dump_json(reply).decode())
            pipe.sadd(self._keys.undelivered_of(reply.channel, reply.chat_id), reply.reply_id)
            pipe.execute()

    def get(self, reply_id: str) -> UndeliveredReply | None:
        """The undelivered reply with this original id, or None."""
        with redis_errors("read the undelivered replies"):
            return _parse(self._redis.hget(self._key, reply_id))

    def all(self) -> list[UndeliveredReply]:
        """Every undelivered reply, oldest first."""
        with redis_errors("read the undelivered replies"):
            raw = self._redis.hvals(self._key)
        found = [reply for reply in map(_parse, raw) if reply is not None]
        return sorted(found, key=lambda reply: reply.at_ms)

    def for_chat(self, channel: str, chat_id: str) -> list[UndeliveredReply]:
        """The undelivered replies of one chat, oldest first: one read of its index when it
        has none (every turn asks)."""
        self._index_once()
        with redis_errors("read the undelivered replies"):
            ids = sorted(self._redis.smembers(self._keys.undelivered_of(channel, chat_id)))
            raw = self._redis.hmget(self._key, ids) if ids else []
        return _of_chat(
            sorted(filter(None, map(_parse, raw)), key=lambda r: r.at_ms), channel, chat_id
        )

    def discard(self, reply_id: str) -> None:
        """Forget a reply (its redelivery was published). Unknown ids are ignored."""
        with redis_errors("update the undelivered replies"):
            reply = _parse(self._redis.hget(self._key, reply_id))
            pipe = self._redis.pipeline()
            pipe.hdel(self._key, reply_id)
            if reply is not None:
                pipe.srem(self._keys.undelivered_of(reply.channel, reply.chat_id), reply_id)
            pipe.execute()

    def _index_once(self) -> None:
        """Index by chat the replies kept before the index existed, once per Redis (then
        marked), looked at once per process."""
        indexed = _INDEXED.setdefault(self._redis.connection_pool, set())
        if self._key in indexed:
            return
        marker = self._keys.undelivered_indexed()
        with redis_errors("index the undelivered replies"):
            if not self._redis.exists(marker):
                pipe = self._redis.pipeline()
                for reply in self.all():
                    pipe.sadd(
                        self._keys.undelivered_of(reply.channel, reply.chat_id), reply.reply_id
                    )
                pipe.set(marker, 1)
                pipe.execute()
        indexed.add(self._key)


_INDEXED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
"""The undelivered hashes (by key) this process found indexed by chat, per Redis (its
client's connection pool)."""


def _parse(raw: object) -> UndeliveredReply | None:
    if not isinstance(raw, str | bytes):
        return None
    try:
        return _ADAPTER.validate_json(raw)
    except ValidationError:
        return None


def _of_chat(replies: list[UndeliveredReply], channel: str, chat_id: str) -> list[UndeliveredReply]:
    return [r for r in replies if (r.channel, r.chat_id) == (channel, chat_id)]


class MemoryUndeliveredReplies:
    """`UndeliveredReplies` in one process's memory, for tests."""

    def __init__(self) -> None:
        self._replies: dict[str, UndeliveredReply] = {}

    def record(self, reply: UndeliveredReply) -> None:
        """See `UndeliveredReplies.record`."""
        self._replies[reply.reply_id] = reply

    def get(self, reply_id: str) -> UndeliveredReply | None:
        """See `UndeliveredReplies.get`."""
        return self._replies.get(reply_id)

    def all(self) -> list[UndeliveredReply]:
        """See `UndeliveredReplies.all`."""
        return sorted(self._replies.values(), key=lambda reply: reply.at_ms)

    def for_chat(self, channel: str, chat_id: str) -> list[UndeliveredReply]:
        """See `UndeliveredReplies.for_chat`."""
        return _of_chat(self.all(), channel, chat_id)

    def discard(self, reply_id: str) -> None:
        """See `UndeliveredReplies.discard`."""
        self._replies.pop(reply_id, None)
