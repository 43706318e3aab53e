"""Replies that could not be delivered in time, kept until they are delivered another way (the
person writes next, or `harness runs redeliver`): a reply is never silently gone.

`UndeliveredReplies` is the contract, `RedisUndeliveredReplies` the Redis implementation,
`MemoryUndeliveredReplies` its in-memory twin."""

from __future__ import annotations

from typing import Protocol

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
    """`UndeliveredReplies` as a Redis hash, original reply id -> `UndeliveredReply` as JSON;
    entries stay until they are discarded after a redelivery was published. Methods raise
    `BusUnavailableError` when Redis fails."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._redis = client
        self._key = keys.undelivered()

    def record(self, reply: UndeliveredReply) -> None:
        """Keep `reply` (replacing an earlier give-up of the same reply). Idempotent."""
        with redis_errors("record an undelivered reply"):
            self._redis.hset(self._key, reply.reply_id, _ADAPTER.dump_json(reply).decode())

    def get(self, reply_id: str) -> UndeliveredReply | None:
        """The undelivered reply with this original id, or None."""
        with redis_errors("read the undelivered replies"):
            raw = self._redis.hget(self._key, reply_id)
        return _parse(raw)

    def all(self) -> list[UndeliveredReply]:
        """Every undelivered reply, oldest first."""
        with redis_errors("read the undelivered replies"):
            raw = self._redis.hvals(self._key)
        found = [reply for reply in map(_parse, raw) if reply is not None]
        return sorted(found, key=lambda reply: reply.at_ms)

    def for_chat(self, channel: str, chat_id: str) -> list[UndeliveredReply]:
        """The undelivered replies of one chat, oldest first."""
        return _of_chat(self.all(), channel, chat_id)

    def discard(self, reply_id: str) -> None:
        """Forget a reply (its redelivery was published). Unknown ids are ignored."""
        with redis_errors("update the undelivered replies"):
            self._redis.hdel(self._key, reply_id)


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
