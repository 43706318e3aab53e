"""The run ledger: Python's side of the run scripts in `lua/` (one method per script).

This is the one module that talks to Redis about runs. Every method is a single round trip
and raises `BusUnavailableError` when Redis fails. Methods a running worker calls take the
run's epoch and report `False` (or raise `LeaseLostError` in the executor) when the epoch is
stale.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import redis
import redis.asyncio
from pydantic import BaseModel, ConfigDict, Field

import harness.runtime.scripts as scripts
from harness.runtime.bus_errors import on_bus, redis_errors
from harness.runtime.keys import Keys
from harness.runtime.kicker import Kick

RunStatus = Literal[
    "queued", "pending", "running", "sleeping", "waiting", "steered",
    "completed", "failed", "cancelled",
]  # fmt: skip
_INT_FIELDS = ("attempt", "epoch", "lease_until", "created_at", "started_at", "ended_at",
               "updated_at", "wake_since")  # fmt: skip
_JSON_FIELDS = ("event", "result", "slots", "parent")


class RunParent(BaseModel, frozen=True):
    """The run waiting for this one's result (`step.invoke`) and the step it waits in; or,
    `detached`, the run that started it without waiting (`step.start`): its end wakes none."""

    run_id: str
    step: str
    detached: bool = False


class RunRecord(BaseModel):
    """A run as the ledger holds it (the run scripts in `lua/` write every field).

    Times are milliseconds since the epoch, 0 when not reached yet. `event` is the triggering
    event and `result` the handler's return value (None until completed), both parsed from
    JSON. `cancel` is a pending cancel request's reason (for a singleton's cancel mode, the
    id of the newer run). `slots` lists (concurrency slot, limit) pairs.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    function_id: str
    status: RunStatus
    attempt: int = 0
    epoch: int = 0
    owner: str = ""
    lease_until: int = 0
    created_at: int = 0
    started_at: int = 0
    ended_at: int = 0
    updated_at: int = 0
    event: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str = ""
    queue: str = ""
    singleton: str = ""
    mode: str = ""
    slots: list[tuple[str, int]] = Field(default_factory=list)
    parent: RunParent | None = None
    cancel: str = ""
    wake_kind: str = ""
    wake_step: str = ""
    wake_since: int = 0
    wait_event: str = ""
    steered_into: str = ""

    @classmethod
    def from_hash(cls, run_id: str, fields: dict[str, str]) -> RunRecord:
        """Parse the run's Redis hash (all strings; JSON fields as text, "" for none)."""
        values: dict[str, Any] = {"id": run_id}
        for name, raw in fields.items():
            if name in _INT_FIELDS:
                values[name] = int(raw or 0)
            elif name in _JSON_FIELDS:
                if raw:
                    values[name] = json.loads(raw)
            else:
                values[name] = raw
        return cls.model_validate(values)


@dataclass(frozen=True)
class Claim:
    """The outcome of trying to start or resume a run.

    `state` is `ok` when this worker now holds the lease; otherwise it says why not
    (`missing`, `terminal`, `busy`, `pending`, `steered`, `suspended`, `throttled`).
    `journal` is the whole journal when `journal_complete`; otherwise only the records written
    since the version the claimant said it holds (none or one). `journal_version` is the
    journal's version now; `started_ms` when the run was first claimed (ms, every attempt)."""

    state: str
    epoch: str = ""
    function_id: str = ""
    event: dict[str, Any] | None = None
    attempt: int = 0
    cancel: str = ""
    journal: dict[str, dict[str, Any]] | None = None
    journal_complete: bool = True
    journal_version: int = 0
    started_ms: int = 0
    kicks: tuple[Kick, ...] = ()


@dataclass(frozen=True)
class RunSeed:
    """A run to create when an event is accepted."""

    id: str
    function_id: str
    queue: str
    singleton: str = ""
    mode: str = ""
    slots: str = ""
    parent: str = ""
    session: str = ""


@dataclass(frozen=True)
class EventPlan:
    """An event to record, planned from what the publisher last read: the runs to create
    (from the trigger table at `functions_version`, "" for none) and the waiter buckets it
    falls in (among waiters using `waiter_paths`). `legacy_waiters` are the runs it wakes among
    waiters recorded before waiters were indexed, when `legacy_checked`. `kick_template` is
    the kicker's `script_template()` ("" to have the kicks returned); with it, the kicks on
    `keep_queue` are returned all the same, not pushed (`KickHold`)."""

    event_id: str
    event_json: str
    event_name: str
    now_ms: int
    runs: list[RunSeed]
    waiter_buckets: list[str]
    functions_version: str
    waiter_paths: tuple[str, ...]
    dedupe_ttl_s: int
    stream_maxlen: int
    kick_template: str = ""
    legacy_waiters: tuple[str, ...] = ()
    legacy_checked: bool = False
    keep_queue: str = ""


AcceptState = Literal["accepted", "duplicate", "stale_functions", "stale_paths", "legacy_waiters"]


@dataclass(frozen=True)
class Acceptance:
    """What the publish script did with an `EventPlan`.

    `accepted`: recorded; `kicks` are those left to send (none when the script pushed them).
    `duplicate`: the id was seen within the dedupe window; nothing was written.
    Otherwise nothing was written and the plan must be made again: `stale_functions` (the
    trigger table is at `functions_version` now), `stale_paths` (the name's waiters use
    `waiter_paths`), `legacy_waiters` (match the name's unindexed waiters, `legacy_checked`).
    """

    state: AcceptState
    kicks: tuple[Kick, ...] = ()
    functions_version: str = ""
    waiter_paths: tuple[str, ...] = ()


def _acceptance(out: list[Any]) -> Acceptance:
    code = int(out[0])
    if code == 1:
        return Acceptance("accepted", kicks=_kicks(out[1:]))
    if code == 0:
        return Acceptance("duplicate")
    if code == 2:
        return Acceptance("stale_functions", functions_version=str(out[1]))
    if code == 3:
        return Acceptance("stale_paths", waiter_paths=tuple(json.loads(out[1])))
    return Acceptance("legacy_waiters")


def _kicks(flat: list[Any]) -> tuple[Kick, ...]:
    """Kicks from a script's flat (run_id, queue, seq, ...) list."""
    return tuple(
        Kick(str(flat[i]), str(flat[i + 1]), int(flat[i + 2])) for i in range(0, len(flat) - 2, 3)
    )


class Ledger:
    """Run state in Redis. Thread-safe (redis-py clients are). Every method raises
    `BusUnavailableError` when Redis fails."""

    def __init__(
        self, client: redis.Redis, keys: Keys, aclient: redis.asyncio.Redis | None = None
    ) -> None:
        self.redis = client
        self.keys = keys
        self._publish = scripts.load(client, "publish")
        self._apublish = scripts.load_async(aclient, "publish") if aclient else None
        self._claim = scripts.load(client, "claim")
        self._renew = scripts.load(client, "renew")
        self._commit = scripts.load(client, "commit")
        self._drain = scripts.load(client, "drain_inbox")
        self._suspend = scripts.load(client, "suspend")
        self._finish = scripts.load(client, "finish")
        self._release = scripts.load(client, "release")
        self._reap = scripts.load(client, "reap")
        self._cancel = scripts.load(client, "request_cancel")

    @on_bus("record the event")
    def accept_event(self, plan: EventPlan) -> Acceptance:
        """Record an event once, in one round trip: check the plan is current, dedupe by id,
        append to the stream, create the planned runs, wake the waiters in its buckets, and
        push the kicks onto the broker (or return them, without `plan.kick_template`).

        Nothing is written unless the plan is current: see `Acceptance` for what to read
        and plan again with otherwise."""
        return _acceptance(self._publish(args=self._publish_args(plan)))

    async def accept_event_async(
        self, plan: EventPlan, *, client: redis.asyncio.Redis | None = None
    ) -> Acceptance:
        """`accept_event` on the async client (blocking on the sync one when there is none);
        on `client` when given (one connection of that client, for a WAIT after it)."""
        args = self._publish_args(plan)
        with redis_errors("record the event"):
            if self._apublish is None:
                return _acceptance(self._publish(args=args))
            return _acceptance(await self._apublish(args=args, client=client))

    def _publish_args(self, plan: EventPlan) -> list[Any]:
        seeds = [seed.__dict__ for seed in plan.runs]
        return [
            self.keys.prefix, plan.event_id, plan.event_json, plan.now_ms, plan.dedupe_ttl_s,
            plan.stream_maxlen, plan.event_name, json.dumps(seeds),
            json.dumps(plan.waiter_buckets), json.dumps(list(plan.legacy_waiters)),
            plan.functions_version, json.dumps(list(plan.waiter_paths)), plan.kick_template,
            "1" if plan.legacy_checked else "0", plan.keep_queue,
        ]  # fmt: skip

    @on_bus("claim the run")
    def claim(
        self,
        run_id: str,
        owner: str,
        now_ms: int,
        ttl_ms: int,
        throttle_ms: int,
        kick_seq: int = 0,
        journal_version: int = -1,
        kick_template: str = "",
    ) -> Claim:
        """Try to take the run's lease (epoch + 1). See `Claim` for the outcomes.

        `kick_seq` is the sequence number of the kick being handled (0 for none): the run's
        kick stops being outstanding whatever the outcome. `journal_version` is the version of
        the journal the claimant keeps (-1: none), so that only what changed is sent. With a
        `kick_template` (the kicker's `script_template()`) the kicks the claim causes (moving
        a singleton's line on) are pushed onto the broker by the script, not returned."""
        out = self._claim(
            args=[
                self.keys.prefix, run_id, owner, now_ms, ttl_ms, throttle_ms, kick_seq,
                journal_version, kick_template,
            ]
        )  # fmt: skip
        state = str(out[0])
        if state != "ok":
            return Claim(state=state, kicks=_kicks(out[2:]))
        flat = out[6]
        journal = {str(flat[i]): json.loads(flat[i + 1]) for i in range(0, len(flat), 2)}
        return Claim(
            state="ok",
            epoch=str(out[1]),
            function_id=str(out[2]),
            event=json.loads(out[3]),
            attempt=int(out[4] or 0),
            cancel=str(out[5] or ""),
            journal=journal,
            journal_complete=str(out[7]) == "full",
            journal_version=int(out[8]),
            started_ms=int(out[9] or 0),
        )

    @on_bus("renew the run's lease")
    def renew(self, run_id: str, epoch: str, now_ms: int, ttl_ms: int) -> tuple[bool, str]:
        """Extend the lease. Returns (still_ours, cancel_request)."""
        ok, cancel = self._renew(args=[self.keys.prefix, run_id, epoch, now_ms, ttl_ms])
        return bool(ok), str(cancel or "")

    @on_bus("record the step")
    def commit_step(
        self, run_id: str, epoch: str, key: str, record: str, counts: Sequence[str | int] = (),
        tries: int = 0,
    ) -> tuple[bool, str]:  # fmt: skip
        """Write a step record under the fence, and add `counts` (the step's `/metrics`
        counters, `step_counters.step_counts`) and its `tries` (the run's `step_tries` keeps
        the most) with it when it is written: one round trip. Returns (written, cancel)."""
        cancel = self._commit(args=[self.keys.prefix, run_id, epoch, key, record, tries, *counts])
        return cancel is not None, str(cancel or "")

    @on_bus("take the run's inbox")
    def drain_inbox(self, run_id: str, epoch: str, key: str, now_ms: int) -> str | None:
        """Move handed-over events into the journal under `key`; returns the record or None."""
        out = self._drain(args=[self.keys.prefix, run_id, epoch, key, now_ms])
        return str(out[1]) if out[0] else None

    @on_bus("suspend the run")
    def suspend(
        self,
        run_id: str,
        epoch: str,
        now_ms: int,
        *,
        kind: str,
        step_key: str,
        wake_at_ms: int | None,
        status: str = "sleeping",
        wait_event: str = "",
        waiter_bucket: str = "",
        count_attempt: bool = False,
        wake_on_inbox: bool = False,
        watch_run: str = "",
    ) -> tuple[int, int]:
        """Park the run and release its lease. Returns (1 parked, 2 already resolved or 0
        stale; the journal's version when parked).

        A run waiting for `wait_event` (kind `wait`) joins the waiters in `waiter_bucket`;
        with `wake_on_inbox`, an event handed to its inbox (steer mode) ends the wait too, and
        one already there ends it at once (2). With `watch_run` the end of that run ends it, at
        once (2) when it has already ended: checked in the script that registers the wait."""
        code, version = self._suspend(
            args=[
                self.keys.prefix, run_id, epoch, now_ms, "" if wake_at_ms is None else wake_at_ms,
                kind, step_key, wait_event, waiter_bucket, status,
                "1" if count_attempt else "0", "1" if wake_on_inbox else "0", watch_run,
            ]
        )  # fmt: skip
        return int(code), int(version)

    @on_bus("finish the run")
    def finish(
        self,
        run_id: str,
        epoch: str,
        now_ms: int,
        *,
        status: str,
        result_json: str = "null",
        error: str = "",
        retention_s: int,
        kick_template: str = "",
        keep_queue: str = "",
    ) -> tuple[bool, tuple[Kick, ...]]:
        """End the run, wake its parent, pass on its singleton lock. Returns (ok, kicks); with
        a `kick_template` (the kicker's `script_template()`) the script pushes the kicks onto
        the broker itself, in the same round trip, and returns only those on `keep_queue`."""
        fence: list[str | int] = [self.keys.prefix, run_id, epoch, now_ms]
        args = [*fence, status, result_json, error, retention_s, kick_template, keep_queue]
        out = self._finish(args=args)
        return bool(out[0]), _kicks(out[1:])

    @on_bus("hand the run back")
    def release(self, run_id: str, epoch: str, now_ms: int) -> tuple[bool, tuple[Kick, ...]]:
        """Give the lease up: the run is queued again and kicked. Returns (released, kicks);
        False when the epoch is stale (the run is no longer this holder's)."""
        out = self._release(args=[self.keys.prefix, run_id, epoch, now_ms])
        return bool(out[0]), _kicks(out[1:])

    @on_bus("reap timers and leases")
    def reap(
        self, now_ms: int, ttl_ms: int, idle_queues: list[str], limit: int = 500
    ) -> tuple[Kick, ...]:
        """Fire due timers, recover runs with expired leases and re-send lost kicks.

        `idle_queues` are the queues whose broker holds no kick now: an outstanding kick of
        theirs that is due for a look is lost. A run whose lease expired gets its tracked
        kick and, last, an untracked `front` one (seq 0) that jumps its queue's backlog."""
        out = self._reap(
            args=[self.keys.prefix, now_ms, ttl_ms, limit, json.dumps(sorted(idle_queues))]
        )
        mark = out.index("!")
        front = out[mark + 1 :]
        recovered = tuple(
            Kick(str(front[i]), str(front[i + 1]), 0, front=True)
            for i in range(0, len(front) - 1, 2)
        )
        return _kicks(out[:mark]) + recovered

    @on_bus("ask the run to stop")
    def request_cancel(
        self, run_id: str, reason: str, now_ms: int
    ) -> tuple[bool, tuple[Kick, ...]]:
        """Ask a live run to stop at its next step boundary; a sleeping or waiting run is
        queued again for it. Returns (False when it is not live, the kicks to send)."""
        out = self._cancel(args=[self.keys.prefix, run_id, reason, now_ms])
        return bool(out[0]), _kicks(out[1:])

    @on_bus("read the run")
    def run(self, run_id: str) -> RunRecord | None:
        """The run's ledger record, or None when unknown or past its retention."""
        record = self.redis.hgetall(self.keys.run(run_id))
        return _record(run_id, record)

    @on_bus("look runs up")
    def runs_starting_with(self, prefix: str, limit: int = 10) -> list[str]:
        """Ids of retained runs that start with `prefix`, sorted, at most `limit`. An exact id
        of a retained run gives just that id. Empty when nothing matches."""
        if prefix and self.redis.exists(self.keys.run(prefix)):
            return [prefix]
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*"
        found = [
            str(run_id)
            for run_id, _ in self.redis.zscan_iter(self.keys.runs, match=pattern, count=1000)
        ]
        pipe = self.redis.pipeline(transaction=False)
        for run_id in found:
            pipe.exists(self.keys.run(run_id))
        alive = [run_id for run_id, ok in zip(found, pipe.execute(), strict=True) if ok]
        return sorted(alive)[:limit]

    @on_bus("read the run's steps")
    def journal(self, run_id: str) -> dict[str, dict[str, Any]]:
        """The run's step records by step key."""
        raw = self.redis.hgetall(self.keys.journal(run_id))
        return {str(k): json.loads(v) for k, v in raw.items()}

    @on_bus("list recent runs")
    def recent(self, limit: int = 20) -> list[RunRecord]:
        """The newest runs first; runs that expired meanwhile are left out."""
        ids = self.redis.zrevrange(self.keys.runs, 0, limit - 1)
        pipe = self.redis.pipeline(transaction=False)
        for run_id in ids:
            pipe.hgetall(self.keys.run(str(run_id)))
        rows = (_record(str(i), fields) for i, fields in zip(ids, pipe.execute(), strict=True))
        return [row for row in rows if row is not None]


def _record(run_id: str, fields: dict[Any, Any]) -> RunRecord | None:
    if not fields:
        return None
    return RunRecord.from_hash(run_id, {str(k): str(v) for k, v in fields.items()})
