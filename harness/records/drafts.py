"""Where each run's streamed draft is on its platform, and until when the platform wants it left
alone: a record of its own, apart from the delivery records (which name only chunks of a
reply actually posted). `DraftRecords` is the contract, `RedisDraftRecords` the Redis
implementation, `MemoryDraftRecords` its in-memory twin."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import redis

from harness.records.deliveries import DELIVERY_TTL_S
from harness.runtime.bus_errors import redis_errors
from harness.runtime.keys import Keys

_MESSAGE_ID = "message_id"
_QUIET_UNTIL_MS = "quiet_until_ms"


@dataclass(frozen=True)
class DraftRecord:
    """One run's draft: its platform message id (None before one is posted, or when the draft
    is only a preview) and the time, in ms since the epoch, before which the platform refuses
    another edit (0 when it has not said)."""

    message_id: str | None = None
    quiet_until_ms: int = 0


class DraftRecords(Protocol):
    """Each run's draft record. The Redis implementation raises `BusUnavailableError` when
    Redis fails."""

    def get(self, run_id: str) -> DraftRecord:
        """The run's draft as recorded so far (an empty record when there is none)."""
        ...

    def record_message(self, run_id: str, message_id: str) -> None:
        """Remember the draft's platform message id. Idempotent."""
        ...

    def hold_until(self, run_id: str, until_ms: int) -> None:
        """Remember that the platform takes no edit of the draft before `until_ms`."""
        ...


class RedisDraftRecords:
    """`DraftRecords` as a Redis hash per run, kept for a week after the last write, like the
    delivery records the final reply is checked against. Methods raise
    `BusUnavailableError` when Redis fails."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._redis = client
        self._keys = keys

    def get(self, run_id: str) -> DraftRecord:
        """The run's draft as recorded so far (an empty record when there is none)."""
        with redis_errors("read the run's draft record"):
            raw = self._redis.hgetall(self._keys.draft(run_id))
        fields = {str(k): str(v) for k, v in raw.items()}
        quiet = fields.get(_QUIET_UNTIL_MS, "")
        return DraftRecord(
            message_id=fields.get(_MESSAGE_ID), quiet_until_ms=int(quiet) if quiet.isdigit() else 0
        )

    def record_message(self, run_id: str, message_id: str) -> None:
        """Remember the draft's platform message id. Idempotent."""
        self._write(run_id, _MESSAGE_ID, message_id)

    def hold_until(self, run_id: str, until_ms: int) -> None:
        """Remember that the platform takes no edit of the draft before `until_ms`."""
        self._write(run_id, _QUIET_UNTIL_MS, str(until_ms))

    def _write(self, run_id: str, field: str, value: str) -> None:
        key = self._keys.draft(run_id)
        with redis_errors("record the run's draft"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.hset(key, field, value)
            pipe.expire(key, DELIVERY_TTL_S)
            pipe.execute()


class MemoryDraftRecords:
    """`DraftRecords` in one process's memory, for tests. Records never expire."""

    def __init__(self) -> None:
        self._drafts: dict[str, DraftRecord] = {}

    def get(self, run_id: str) -> DraftRecord:
        """See `DraftRecords.get`."""
        return self._drafts.get(run_id, DraftRecord())

    def record_message(self, run_id: str, message_id: str) -> None:
        """See `DraftRecords.record_message`."""
        self._drafts[run_id] = replace(self.get(run_id), message_id=message_id)

    def hold_until(self, run_id: str, until_ms: int) -> None:
        """See `DraftRecords.hold_until`."""
        self._drafts[run_id] = replace(self.get(run_id), quiet_until_ms=until_ms)
