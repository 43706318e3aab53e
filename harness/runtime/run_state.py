"""One execution of a run: what it holds, how it writes its journal, and how it is stopped.

A `RunState` is shared by the step API (`harness.runtime.steps`), the executor and the lease
keeper. Every journal write goes through `commit` or `suspend`, both fenced by the run's
lease epoch: a write refused by the fence means another worker owns the run now, and this
execution unwinds with `LeaseLost` without writing anything more. The fence guards writes,
not what a step does before it writes (a tool's side effects), so a step does not start on
a lease that may have run out: a process stalled past its lease (starved under load, its
renewer too) would otherwise run again a step the run's next owner has completed
meanwhile (`check_stop`). The interrupts below are `BaseException`s so that a handler's
`except Exception` never swallows them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import NonDeterminismError
from harness.observe.tracing import NO_RUN, RunSpan
from harness.runtime.functions import FunctionSpec
from harness.runtime.instance import Runtime
from harness.runtime.kicker import Kick, KickHold, kick_all


class Interrupt(BaseException):
    """Unwinds a handler without running its `except Exception` blocks. Never caught by users."""


class Suspended(Interrupt):
    """The run parked itself (sleep, wait, retry backoff); a timer or an event resumes it."""


class Cancelled(Interrupt):
    """The run was asked to stop; raised at the next step boundary."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LeaseLost(Interrupt):
    """Another worker owns the run now; this execution must stop without writing anything."""


@dataclass
class RunState:
    """Mutable, per-execution state shared by the step API, the executor and the lease keeper."""

    runtime: Runtime
    spec: FunctionSpec
    run_id: str
    epoch: str
    event: dict[str, Any]
    journal: dict[str, dict[str, Any]]
    attempt: int = 0
    run_attempt: int = 0
    cancel_reason: str = ""
    lease_lost: bool = False
    # the worker is handing its runs back (`leases.hand_back`): stop at the next step boundary,
    # but a step in flight may still record what it did under the lease
    handing_back: bool = False
    # and this execution released the run as it stopped (`leases.release_run`)
    handed_back: bool = False
    abort: threading.Event = field(default_factory=threading.Event)
    counters: dict[str, int] = field(default_factory=dict)
    span: RunSpan = NO_RUN
    # the `step.run` whose function runs now: its key ("" outside one) and its try (failures
    # so far), kept apart from `attempt`, which a step run inside it changes
    running: tuple[str, int] = ("", 0)
    # how many batches of steps (`step.run_all`) run now: steps in flight as `running` is
    batches: int = 0
    # the offloaded call `Step.offload_outcome` last found unsettled, so that the `offload`
    # that follows in the same step need not read its outcome again ("" when none)
    unsettled_call: str = ""
    # when the lease runs out as far as this execution knows (ms by the runtime's clock: its
    # claim's or last renewal's time plus the TTL); 0 when unknown, then never checked
    lease_until_ms: int = 0
    # when the run was first claimed (ms), the same for every attempt; 0 when unknown
    started_ms: int = 0
    # kicks of runs this execution's events started on its own queue, since its last step
    # boundary (`hold_kicks`)
    held_kicks: list[Kick] = field(default_factory=list)

    def hold_kicks(self, kicks: Iterable[Kick]) -> None:
        """Take the kicks of the runs this execution started (`Step.send_event`, `invoke`,
        `start`) or made ready as it ended (its parent woken, its singleton's next run):
        those on this run's own queue are held, the others sent now. Held kicks are sent at
        the next step boundary (`check_stop`); when the execution ends first, the executor
        advances their runs on this thread instead (`executor.advance`), so a run's last
        event (a turn's reply) is handled without a round trip through the broker."""
        for kick in kicks:
            if kick.queue == self.spec.queue and not kick.front:
                self.held_kicks.append(kick)
            else:
                self.runtime.kicker.kick(kick)

    @property
    def kick_hold(self) -> KickHold:
        """`hold_kicks` for this run's queue, for a publish or the run's end to hand the kicks
        on it to (those on other queues the script pushes itself)."""
        return KickHold(self.spec.queue, self.hold_kicks)

    def send_held_kicks(self) -> None:
        """Send the held kicks through the runtime's kicker."""
        if self.held_kicks:
            kicks, self.held_kicks = self.held_kicks, []
            kick_all(self.runtime.kicker, kicks)

    def request_stop(self, *, cancel: str = "", lost: bool = False) -> None:
        """Note a cancel request or a lost lease and wake anything watching `abort`."""
        if cancel:
            self.cancel_reason = cancel
        if lost:
            self.lease_lost = True
        self.abort.set()

    def check_stop(self) -> None:
        """Raise `LeaseLost` or `Cancelled` if this execution was told to stop (`LeaseLost`
        too when its worker is handing it back); the step boundary every step passes before
        it does anything. When less than half the lease is left (the renewer is late: it
        renews after a third), renews it first, under the fence, so no step starts on a
        lease another worker may have taken; raises `LeaseLost` when the renewal is refused,
        and `BusUnavailableError` when Redis fails. Sends the kicks held since the last
        boundary first (`hold_kicks`): the run goes on, so the runs its events started must
        not wait for it."""
        self.send_held_kicks()
        if self.handing_back:
            raise LeaseLost()
        if not self.lease_lost:
            self._confirm_lease()
        if self.lease_lost:
            raise LeaseLost()
        if self.cancel_reason:
            raise Cancelled(self.cancel_reason)

    def _confirm_lease(self) -> None:
        ttl_ms = int(self.runtime.lease_ttl * 1000)
        now = self.runtime.now_ms()
        if not self.lease_until_ms or self.lease_until_ms - now > ttl_ms // 2:
            return
        ok, cancel = self.runtime.ledger.renew(self.run_id, self.epoch, now, ttl_ms)
        if not ok:
            self.request_stop(lost=True)
            return
        self.lease_until_ms = now + ttl_ms
        if cancel:
            self.request_stop(cancel=cancel)

    def step_key(self, step_id: str) -> str:
        """The journal key of the next step named `step_id` in this execution: `think:0`,
        then `think:1`, ... Raises `ValueError` for an empty id or one containing ':'."""
        if not step_id or ":" in step_id:
            raise ValueError(f"step id {step_id!r} must be non-empty and contain no ':'")
        n = self.counters.get(step_id, 0)
        self.counters[step_id] = n + 1
        return f"{step_id}:{n}"

    def recorded(self, key: str, kind: str) -> dict[str, Any] | None:
        """The journal entry of step `key`, or None when it has not been recorded. Raises
        `NonDeterminismError` when it was recorded as another kind of step."""
        rec = self.journal.get(key)
        if rec is not None and rec.get("k") != kind:
            raise NonDeterminismError(
                f"step {key!r} was recorded as {rec.get('k')!r} but is now called as {kind!r}; "
                "a handler must call its steps in the same order on every replay"
            )
        return rec

    def commit(
        self,
        key: str,
        record: str,
        entry: dict[str, Any] | None = None,
        counts: Sequence[str | int] = (),
        tries: int = 0,
    ) -> None:
        """Write `record` (JSON) as step `key`'s journal entry, with the step's `/metrics`
        counters `counts` (`harness.runtime.step_counters`) and its `tries` (its `n`; 0 for a
        step that is not tried), and keep `entry` (default: the record parsed) as this
        execution's copy of it. Raises `LeaseLost` when the fence refuses the write; a cancel
        request that came back with it is noted, not raised. An execution already told its
        lease is lost (`request_stop(lost=True)`: handed back, or refused before) writes
        nothing: its step may have ended early because it was told to stop, and the hand-back's
        release may not have reached Redis's fence yet."""
        if self.lease_lost:
            raise LeaseLost()
        ok, cancel = self.runtime.ledger.commit_step(
            self.run_id, self.epoch, key, record, counts, tries
        )
        if not ok:
            self.request_stop(lost=True)
            raise LeaseLost()
        self.journal[key] = json.loads(record) if entry is None else entry
        if cancel:
            self.request_stop(cancel=cancel)

    def suspend(self, key: str, kind: str, wake_at_ms: int | None, **kw: Any) -> int:
        """Park the run at step `key` (`kind`: sleep, wait, invoke, retry) until `wake_at_ms`
        or what `kw` names wakes it. Returns 1 when parked (the journal is kept for the
        resume; this execution must end) or 2 when what it waits for had already happened;
        raises `LeaseLost` when the fence refuses or this execution was told its lease is
        lost (see `commit`)."""
        if self.lease_lost:
            raise LeaseLost()
        out, version = self.runtime.ledger.suspend(
            self.run_id,
            self.epoch,
            self.runtime.now_ms(),
            kind=kind,
            step_key=key,
            wake_at_ms=wake_at_ms,
            **kw,
        )
        if out == 0:
            raise LeaseLost()
        if out == 1:  # parked: keep the journal for the resume (this execution ends here)
            self.runtime.journals.keep(self.run_id, version, self.journal)
            if kind != "retry":  # a retry's step has its own span; this shows where it parked
                self.span.step(key, kind, 1).end()
        return out

    def resolved_record(self, key: str) -> dict[str, Any]:
        """Step `key`'s journal entry as Redis holds it (written by whoever resolved the
        wait), kept as this execution's copy."""
        raw = self.runtime.redis.hget(self.runtime.keys.journal(self.run_id), key)
        rec: dict[str, Any] = json.loads(raw)  # type: ignore[arg-type]
        self.journal[key] = rec
        return rec

    def stamps(self, started_ms: int) -> str:
        """`"s":<ms>,"t":<ms>`: when the step began and when it is being recorded, so
        `harness runs show` can order the journal and time each step."""
        return f'"s":{started_ms},"t":{self.runtime.now_ms()}'


__all__ = ["Cancelled", "Interrupt", "LeaseLost", "RunState", "Suspended"]
