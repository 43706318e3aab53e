"""Advancing a run: claim it, replay its handler under a renewed lease, record the outcome.

`advance(runtime, run_id)` is what a kick does. It is safe to call any number of times, from
any number of workers, for the same run: only the claimant of the current epoch executes.

When an execution ends right after an event it sent started runs on its own queue (a turn's
last step publishes its reply, whose delivery is a run of its own; a parent invokes a child
and parks), or its end made runs on its queue ready (the parent it wakes, the next run of
its singleton), `advance` goes on with those runs on the same thread (at most
`MAX_CONTINUED`), instead of a kick through the broker and a wait in its queue: their kicks
were held, not pushed (`RunState.hold_kicks`).
They stay tracked as outstanding until claimed, so if this worker dies first the reaper
sends them as it sends any lost kick.
"""

from __future__ import annotations

import json
import logging
from collections import deque

from harness.envelope import (
    FUNCTION_CANCELLED,
    FUNCTION_FAILED,
    Event,
    EventData,
    FunctionCancelled,
    FunctionFailed,
)
from harness.errors import (
    BusUnavailableError,
    FunctionNotFoundError,
    NonRetriableError,
    StepError,
)
from harness.redaction import redact
from harness.runtime.bus import publish
from harness.runtime.bus_errors import redis_errors
from harness.runtime.functions import EventTrigger, Function, FunctionSpec
from harness.runtime.instance import Runtime
from harness.runtime.journals import Journal
from harness.runtime.kicker import Kick, kick_all
from harness.runtime.leases import LeaseKeeper, release_run
from harness.runtime.ledger import Claim
from harness.runtime.log_context import enter_run
from harness.runtime.retries import backoff_seconds
from harness.runtime.run_state import Cancelled, LeaseLost, RunState, Suspended
from harness.runtime.sessions import session_of
from harness.runtime.steps import Context

log = logging.getLogger("harness.run")
THROTTLE_MS = 250
MISSING_FUNCTION_RETRIES = 30
MISSING_FUNCTION_DELAY_MS = 2_000
MAX_CHILDREN = 1_000
"""How many of a cancelled run's children (the newest) are asked to stop with it."""
MAX_CONTINUED = 8
"""How many runs one `advance` goes on with after its own (see the module); the rest of a
longer chain is kicked through the broker, so one thread is not held by it."""


def advance(runtime: Runtime, run_id: str, kick_seq: int = 0) -> str:
    """Try to advance one run. Returns what happened: `completed`, `failed`, `cancelled`,
    `suspended`, `lease-lost`, `passed-on` (this worker is stopping), or the claim's reason
    for not running (`busy`, ...).
    `kick_seq` is the sequence number of the kick that asked for this (0 for none).

    Never raises for anything a handler does; Redis errors propagate (the kick is retried
    by the scheduler's reaper). Then advances the runs whose kicks the execution held (see
    the module), whose outcomes are not returned.
    """
    outcome, held = _advance(runtime, run_id, kick_seq)
    if held:
        _go_on(runtime, deque(held))
    return outcome


def _go_on(runtime: Runtime, held: deque[Kick]) -> None:
    """Advance the held kicks' runs here, and the runs those hold in turn, up to
    `MAX_CONTINUED`; kick the rest through the broker (all of them when this worker is
    stopping, or Redis failed: the broker, or else the reaper, gets them to a worker)."""
    for _ in range(MAX_CONTINUED):
        if not held or runtime.stopping.is_set():
            break
        kick = held.popleft()
        try:
            with redis_errors("advance the run"):
                _outcome, more = _advance(runtime, kick.run_id, 0)  # 0: not the broker's
        except BusUnavailableError as exc:
            log.warning(
                "run %s: Redis failed while advancing it (%s); the reaper kicks it again",
                kick.run_id, type(exc.__cause__ or exc).__name__,
            )  # fmt: skip
            break
        held.extend(more)
    kick_all(runtime.kicker, held)


def _advance(runtime: Runtime, run_id: str, kick_seq: int) -> tuple[str, list[Kick]]:
    """`advance` of one run: its outcome, and the kicks its execution held at its end."""
    if runtime.stopping.is_set():
        return _pass_on(runtime, run_id, kick_seq), []
    now, ttl_ms = runtime.now_ms(), int(runtime.lease_ttl * 1000)
    claim = runtime.ledger.claim(
        run_id,
        runtime.new_owner(),
        now,
        ttl_ms,
        THROTTLE_MS,
        kick_seq,
        runtime.journals.version(run_id),
        runtime.kicker.script_template(),
    )
    kick_all(runtime.kicker, claim.kicks)
    if claim.state != "ok":
        return claim.state, []
    fn = runtime.registry.get(claim.function_id)
    assert claim.event is not None
    if fn is None:
        return _function_missing(runtime, run_id, claim), []
    state = RunState(
        runtime=runtime,
        spec=fn.spec,
        run_id=run_id,
        epoch=claim.epoch,
        event=claim.event,
        journal=claimed_journal(runtime, run_id, claim),
        attempt=claim.attempt,
        run_attempt=claim.attempt,
        lease_until_ms=now + ttl_ms,
        started_ms=claim.started_ms,
    )
    if claim.cancel:
        state.request_stop(cancel=claim.cancel)
    session = session_of(claim.event)
    enter_run(run_id, fn.spec.id, session)
    state.span = runtime.tracer.run(run_id, fn.spec.id, session, claim.attempt)
    outcome = "error"
    try:
        with LeaseKeeper(state):
            outcome = _execute(fn, state)
    finally:
        state.span.finish(outcome)
    return outcome, state.held_kicks


def _pass_on(runtime: Runtime, run_id: str, kick_seq: int) -> str:
    """A stopping worker runs nothing new: it sends the kick on, unchanged (still the run's
    outstanding kick), for another worker to take."""
    record = runtime.ledger.run(run_id)
    if record is not None:
        runtime.kicker.kick(Kick(run_id, record.queue, kick_seq))
    return "passed-on"


def claimed_journal(runtime: Runtime, run_id: str, claim: Claim) -> Journal:
    """The run's whole journal: the claim's, or the one this worker kept plus the claim's
    changes to it."""
    assert claim.journal is not None
    kept = runtime.journals.take(run_id)
    if claim.journal_complete:
        return claim.journal
    if kept is None:  # dropped meanwhile by another thread of this worker: read it all
        return runtime.ledger.journal(run_id)
    kept.records.update(claim.journal)  # taken: this execution owns the records now
    return kept.records


def _function_missing(runtime: Runtime, run_id: str, claim: Claim) -> str:
    """This worker does not know the run's function: it may be reloading (the sidecar) or a
    newer version may be rolling out. Give other workers, and this one, a minute to have it
    (a retry every 2 s), then fail the run with a clear error."""
    assert claim.event is not None
    if claim.attempt < MISSING_FUNCTION_RETRIES:
        log.warning(
            "run %s: function %s is not loaded in %s; retrying",
            run_id, claim.function_id, runtime.worker_id,
        )  # fmt: skip
        out, _ = runtime.ledger.suspend(
            run_id, claim.epoch, runtime.now_ms(), kind="retry", step_key="",
            wake_at_ms=runtime.now_ms() + MISSING_FUNCTION_DELAY_MS, count_attempt=True,
        )  # fmt: skip
        return "suspended" if out else "lease-lost"
    stand_in = FunctionSpec(id=claim.function_id, triggers=(EventTrigger(name="*"),), retries=0)
    state = RunState(runtime, stand_in, run_id, claim.epoch, claim.event, {})
    message = f"function {claim.function_id!r} is not loaded in any worker that claimed the run"
    outcome = _fail(state, FunctionNotFoundError(message), claim.function_id)
    state.send_held_kicks()  # a stand-in's queue may not be the run's: no going on here
    return outcome


def _execute(fn: Function, state: RunState) -> str:
    ctx = Context(state, log)
    try:
        result = fn(ctx)
    except Suspended:
        return "suspended"
    except LeaseLost:
        if state.handing_back:  # this worker stops: the run goes to another (if not gone yet)
            state.handed_back = release_run(state)
        else:
            log.warning(
                "run %s: lease lost to another worker; stopping without writing", state.run_id
            )
        return "lease-lost"
    except Cancelled as exc:
        return _cancel(state, exc.reason)
    except (StepError, NonRetriableError) as exc:
        return _fail(state, exc, fn.id)
    except Exception as exc:
        return _retry_or_fail(state, exc, fn.id)
    try:
        encoded = json.dumps(result, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        message = f"function {fn.id!r} returned a {type(result).__name__}, not JSON data ({exc})"
        return _fail(state, TypeError(message), fn.id)
    return _finish(state, "completed", result_json=encoded)


def _retry_or_fail(state: RunState, exc: Exception, function_id: str) -> str:
    if state.run_attempt >= state.spec.retries:
        return _fail(state, exc, function_id)
    rt = state.runtime
    failures = state.run_attempt + 1
    log.warning("run %s: attempt %d failed (%s); retrying", state.run_id, failures, exc)
    wake = rt.now_ms() + int(backoff_seconds(rt.retry_backoff, failures) * 1000)
    out, _ = rt.ledger.suspend(
        state.run_id, state.epoch, rt.now_ms(), kind="retry", step_key="", wake_at_ms=wake,
        count_attempt=True,
    )  # fmt: skip
    return "suspended" if out else "lease-lost"


def _fail(state: RunState, exc: BaseException, function_id: str) -> str:
    error = redact(f"{type(exc).__name__}: {exc}")[:2000]
    state.span.finish("failed", error)
    log.error("run %s of %s failed: %s", state.run_id, function_id, error)
    if state.event.get("name") != FUNCTION_FAILED:  # a failing failure handler must not loop
        failed = FunctionFailed(
            function_id=function_id, run_id=state.run_id, event=state.event, error=error
        )
        _notify(state, FUNCTION_FAILED, f"failed:{state.run_id}", failed)
    return _finish(state, "failed", error=error)


def _cancel(state: RunState, reason: str) -> str:
    log.info("run %s cancelled: %s", state.run_id, reason)
    _cancel_children(state)
    cancelled = FunctionCancelled(
        function_id=state.spec.id, run_id=state.run_id, event=state.event, reason=reason
    )
    _notify(state, FUNCTION_CANCELLED, f"cancelled:{state.run_id}", cancelled)
    return _finish(state, "cancelled", error=f"cancelled: {reason}")


def _cancel_children(state: RunState) -> None:
    """Ask the runs this run started (waited for or detached) that are still live to stop
    too; each cancels its own children in turn. Before the run is finished: a crash in
    between asks again on the retry, and asking a run that has ended does nothing."""
    rt = state.runtime
    children = rt.run_index.newest(rt.keys.runs_of_parent(state.run_id), 0, 0, MAX_CHILDREN)
    reason = f"its parent run {state.run_id} was cancelled"
    for child in children:
        _live, kicks = rt.ledger.request_cancel(child, reason, rt.now_ms())
        kick_all(rt.kicker, kicks)


def _notify(state: RunState, name: str, event_id: str, data: EventData) -> None:
    # Published before the run is finished: if we crash in between, the retry publishes
    # the same event id again, which the bus ignores. Its runs' kicks are held ahead of the
    # ones the finish makes ready, so the runs go on in that order: a cancelled turn's
    # "reconsidering" notice before the chat's next turn.
    event = Event(name=name, id=event_id, data=data.model_dump(mode="json"))
    publish(event, runtime=state.runtime, hold=state.kick_hold)


def _finish(state: RunState, status: str, *, result_json: str = "null", error: str = "") -> str:
    rt = state.runtime
    ok, kicks = rt.ledger.finish(
        state.run_id, state.epoch, rt.now_ms(), status=status, result_json=result_json,
        error=error, retention_s=rt.retention_s, kick_template=rt.kicker.script_template(),
        keep_queue=state.spec.queue,
    )  # fmt: skip
    state.hold_kicks(kicks)  # a parent woken, the chat's next run: gone on with here
    return status if ok else "lease-lost"
