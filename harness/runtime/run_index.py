"""Finding runs by function, chat session, status or parent without reading every run.

The run scripts (`lua/`) keep one sorted set of run ids per function, per session, per
status and per parent run, scored by creation time, and move a run between status sets
whenever its status changes. This module reads them (newest first, from a creation time on),
trims them with the run retention, and indexes runs created before the indexes existed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import get_args

import redis

from harness.runtime import scripts
from harness.runtime.bus_errors import on_bus
from harness.runtime.keys import Keys
from harness.runtime.ledger import RunRecord, RunStatus
from harness.runtime.sessions import session_of

STATUSES: tuple[str, ...] = get_args(RunStatus)
_BATCH = 500


class RunIndex:
    """The run indexes in Redis. Thread-safe (redis-py clients are)."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys
        self._step_tries = scripts.load(client, "step_tries")

    @on_bus("count runs")
    def sizes(self, index_keys: Sequence[str]) -> list[int]:
        """How many run ids each of `index_keys` holds (0 for none)."""
        pipe = self.redis.pipeline(transaction=False)
        for key in index_keys:
            pipe.zcard(key)
        return [int(n) for n in pipe.execute()]

    @on_bus("list runs")
    def newest(self, index_key: str, since_ms: int, offset: int, count: int) -> list[str]:
        """Up to `count` run ids of `index_key` created at `since_ms` or later, newest first,
        skipping the `offset` newest."""
        ids = self.redis.zrevrangebyscore(index_key, "+inf", since_ms, start=offset, num=count)
        return [str(run_id) for run_id in ids]

    @on_bus("read runs")
    def records(self, run_ids: Sequence[str]) -> list[RunRecord]:
        """The records of `run_ids`, in order; runs that expired meanwhile are left out."""
        pipe = self.redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hgetall(self.keys.run(run_id))
        found = []
        for run_id, fields in zip(run_ids, pipe.execute(), strict=True):
            if fields:
                found.append(
                    RunRecord.from_hash(run_id, {str(k): str(v) for k, v in fields.items()})
                )
        return found

    @on_bus("read run statuses")
    def statuses(self, run_ids: Sequence[str]) -> list[tuple[str, str] | None]:
        """For each of `run_ids`, its status (a `RunStatus`) and the event a waiting run waits
        for ("" when none), or None for a run unknown or past its retention: two fields each,
        one round trip, for who asks often whether runs are over without their records."""
        pipe = self.redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hmget(self.keys.run(run_id), "status", "wait_event")
        return [
            None if status is None else (str(status), str(waits_for or ""))
            for status, waits_for in pipe.execute()
        ]

    @on_bus("read step attempts")
    def step_tries(self, run_ids: Sequence[str]) -> list[int]:
        """For each of `run_ids`, the most tries one of its steps took (0 when none is
        recorded). Reads the `step_tries` field the commit script keeps in each run's hash: one
        round trip that reads no step. Only a run without it (none of its own steps was
        tried yet: a fork's copied journal, a run recorded before the field existed) has its
        journal read, by `lua/step_tries.lua`, in a second round trip."""
        if not run_ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hget(self.keys.run(run_id), "step_tries")
        kept: list[int | None] = [None if n is None else int(n) for n in pipe.execute()]
        missing = [i for i, n in enumerate(kept) if n is None]
        if missing:
            keys = [self.keys.journal(run_ids[i]) for i in missing]
            for i, n in zip(missing, self._step_tries(keys=keys, args=[]), strict=True):
                kept[i] = int(n)
        return [n or 0 for n in kept]

    def _index_keys(self) -> Iterator[str]:
        yield self.keys.runs
        yield from (self.keys.runs_in_status(status) for status in STATUSES)
        yield from (str(key) for key in self.redis.sscan_iter(self.keys.run_indexes, count=500))

    @on_bus("trim the run indexes")
    def trim(self, cutoff_ms: int) -> int:
        """Forget runs created before `cutoff_ms` in every index (their records expired), and
        the names of indexes left empty. Returns how many entries were removed."""
        removed = 0
        for key in list(self._index_keys()):
            removed += int(self.redis.zremrangebyscore(key, "-inf", cutoff_ms))
            if key.startswith(f"{self.keys.prefix}:runs:") and not self.redis.exists(key):
                self.redis.srem(self.keys.run_indexes, key)
        return removed

    @on_bus("index older runs")
    def build(self) -> int:
        """Index every retained run once (runs created before the indexes existed); later
        calls do nothing. Returns how many runs were indexed. Idempotent."""
        if self.redis.exists(self.keys.run_indexes_built):
            return 0
        done, start = 0, 0
        while ids := [str(i) for i in self.redis.zrange(self.keys.runs, start, start + _BATCH - 1)]:
            start += _BATCH
            pipe = self.redis.pipeline(transaction=False)
            for run_id in ids:
                pipe.hmget(
                    self.keys.run(run_id), "function_id", "status", "created_at", "event", "parent"
                )
            rows = pipe.execute()
            pipe = self.redis.pipeline(transaction=False)
            for run_id, (function_id, status, created, event, parent) in zip(
                ids, rows, strict=True
            ):
                if not function_id or not status:
                    continue
                score = int(created or 0)
                pipe.zadd(self.keys.runs_of_function(function_id), {run_id: score})
                pipe.sadd(self.keys.run_indexes, self.keys.runs_of_function(function_id))
                pipe.zadd(self.keys.runs_in_status(status), {run_id: score})
                session = session_of(json.loads(event)) if event else ""
                if session:
                    pipe.zadd(self.keys.runs_of_session(session), {run_id: score})
                    pipe.sadd(self.keys.run_indexes, self.keys.runs_of_session(session))
                if parent:
                    parent_key = self.keys.runs_of_parent(json.loads(parent)["run_id"])
                    pipe.zadd(parent_key, {run_id: score})
                    pipe.sadd(self.keys.run_indexes, parent_key)
                done += 1
            pipe.execute()
        self.redis.set(self.keys.run_indexes_built, "1")
        return done
