"""Publishing events: validate, record once, fan out to matching functions, wake waiters."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis as AsyncRedis

from harness.envelope import Event, read_event
from harness.errors import BusUnavailableError, FunctionNotFoundError
from harness.runtime import waiters
from harness.runtime.bus_errors import redis_errors
from harness.runtime.functions import FunctionSpec
from harness.runtime.instance import Runtime
from harness.runtime.kicker import KickHold, kick_all, kick_all_async
from harness.runtime.ledger import Acceptance, EventPlan, RunSeed
from harness.runtime.replication import acknowledge
from harness.runtime.sessions import session_of
from harness.runtime.triggers import NEVER_LOADED

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PublishResult:
    """What a publish did. `duplicate` is True when the event id was already accepted
    within the dedupe window; then nothing else happened."""

    event_id: str
    duplicate: bool
    run_ids: tuple[str, ...] = ()


def run_id_for(function_id: str, event_id: str) -> str:
    """The run id for a function and an event: the same pair always gives the same run."""
    digest = hashlib.blake2b(f"{function_id}\n{event_id}".encode(), digest_size=12).hexdigest()
    return f"r{digest}"


def _seed(spec: FunctionSpec, event_id: str, event: dict[str, Any], parent: str = "") -> RunSeed:
    return RunSeed(
        id=run_id_for(spec.id, event_id),
        function_id=spec.id,
        queue=spec.queue,
        singleton=spec.singleton_value(event),
        mode=spec.singleton.mode if spec.singleton else "",
        slots=json.dumps(spec.concurrency_slots(event)) if spec.concurrency else "",
        parent=parent,
        session=session_of(event),
    )


def publish(
    event: Event | dict[str, Any],
    *,
    runtime: Runtime,
    target: str | None = None,
    parent: tuple[str, str] | None = None,
    detached: bool = False,
    hold: KickHold | None = None,
) -> PublishResult:
    """Publish an event: idempotent by event id for 24 hours.

    Validates it (`InvalidEventError` names every problem and nothing is recorded), appends
    it to the events stream, creates one run per matching function and kicks them, and
    resumes runs waiting for it. `target` runs exactly that function instead of fanning out
    (used for invocations); `parent` is (run_id, step_key) of the run waiting for the result,
    or, `detached`, of the run that started it without waiting (`Step.start`). `hold` takes
    the kicks of the runs it starts on its queue, to send them itself (`RunState.kick_hold`);
    the publish script pushes the others onto the broker, and by default all of them.
    Raises `BusUnavailableError` when Redis fails; the event may or may not have been
    accepted, and publishing it again is safe.
    """
    with redis_errors("publish the event"):
        return _publish(event, runtime, target, parent, detached, hold)


def _publish(
    event: Event | dict[str, Any],
    runtime: Runtime,
    target: str | None,
    parent: tuple[str, str] | None,
    detached: bool = False,
    hold: KickHold | None = None,
) -> PublishResult:
    ev = runtime.check_event(event if isinstance(event, Event) else read_event(event))
    planner = _Planner(runtime, ev, target, parent, detached, keep_queue=hold.queue if hold else "")
    for _ in range(MAX_PLANS):
        outcome = runtime.ledger.accept_event(planner.plan())
        if outcome.state == "accepted":
            if hold is None:
                kick_all(runtime.kicker, outcome.kicks)
            else:
                hold.take(outcome.kicks)
            return planner.result()
        if outcome.state == "duplicate":
            return _duplicate(ev)
        if outcome.state == "stale_functions":
            runtime.triggers.reload(outcome.functions_version)
        elif outcome.state == "legacy_waiters":
            planner.legacy = runtime.redis.hgetall(runtime.keys.waiters(ev.name))  # type: ignore[assignment]
        planner.learn(outcome)
    raise BusUnavailableError("the trigger table or the waiters kept changing while publishing")


async def publish_async(
    event: Event | dict[str, Any],
    *,
    runtime: Runtime,
) -> PublishResult:
    """`publish` for an event loop: every Redis call and kick goes through the runtime's async
    client (`Runtime.aredis`) and kicker, so the loop never blocks on I/O and no thread is
    involved. Same contract and errors as `publish`; fans out only (no `target`). Usually one
    round trip: the publish script also pushes the kicks onto the broker. With
    `runtime.wait_replicas` > 0 it returns once that many replicas hold the event, and raises
    `ReplicationTimeoutError` (a `BusUnavailableError`: the web answers 503) when fewer did
    (this needs `runtime.aredis`, which the assembled runtime always has)."""
    with redis_errors("publish the event"):
        ev = runtime.check_event(event if isinstance(event, Event) else read_event(event))
        if runtime.aredis is None:
            return _publish(ev, runtime, None, None)
        planner = _Planner(runtime, ev, None, None)
        for _ in range(MAX_PLANS):
            plan = planner.plan()
            if runtime.wait_replicas > 0:
                outcome = await _accept_replicated(runtime, runtime.aredis, plan)
            else:
                outcome = await runtime.ledger.accept_event_async(plan)
                if outcome.state == "accepted":
                    await kick_all_async(runtime.kicker, outcome.kicks)
            if outcome.state == "accepted":
                return planner.result()
            if outcome.state == "duplicate":
                return _duplicate(ev)
            if outcome.state == "stale_functions":
                await runtime.triggers.reload_async(outcome.functions_version)
            elif outcome.state == "legacy_waiters":
                legacy = await runtime.aredis.hgetall(runtime.keys.waiters(ev.name))
                planner.legacy = {str(k): str(v) for k, v in legacy.items()}
            planner.learn(outcome)
        raise BusUnavailableError("the trigger table or the waiters kept changing while publishing")


MAX_PLANS = 5  # a plan goes stale only when functions are registered or waiters use a new path


async def _accept_replicated(runtime: Runtime, aredis: AsyncRedis, plan: EventPlan) -> Acceptance:
    """Accept on one connection, kick, then WAIT on that connection for the replicas (see
    `harness.runtime.replication`). The kicks go out even when the WAIT then times out: the
    runs exist on the master, and if it survives they should not wait for the reaper. A stale
    plan wrote nothing, so it returns at once for the caller to plan again."""
    async with aredis.client() as connection:
        outcome = await runtime.ledger.accept_event_async(plan, client=connection)
        if outcome.state not in ("accepted", "duplicate"):
            return outcome
        if outcome.state == "accepted":
            await kick_all_async(runtime.kicker, outcome.kicks)
        await acknowledge(
            connection, wrote=outcome.state == "accepted", replicas=runtime.wait_replicas,
            timeout_ms=runtime.wait_timeout_ms, mark_key=runtime.keys.replication_mark,
        )  # fmt: skip
    return outcome


class _Planner:
    """Plans one event's `EventPlan` from what this process last read (the trigger table's
    specs, the waiters' match paths), and again after the publish script said what changed."""

    def __init__(
        self,
        runtime: Runtime,
        ev: Event,
        target: str | None,
        parent: tuple[str, str] | None,
        detached: bool = False,
        *,
        keep_queue: str = "",
    ) -> None:
        self.runtime, self.ev, self.target, self.parent = runtime, ev, target, parent
        self.detached = detached
        self.keep_queue = keep_queue  # the script returns the kicks on it, pushes the others
        self.as_dict = ev.model_dump(mode="json")
        self.event_json = json.dumps(self.as_dict, separators=(",", ":"))
        self.legacy: dict[str, str] | None = None
        self.seeds: list[RunSeed] = []

    def plan(self) -> EventPlan:
        """The plan from what is known now."""
        runtime, ev = self.runtime, self.ev
        version, specs = (
            runtime.triggers.planned()
            if self.target is not None
            else runtime.triggers.planned_for(ev.name)
        )
        self.seeds = self._seeds(specs)
        paths = runtime.waiter_paths.of(ev.name)
        legacy = waiters.legacy_matches(self.legacy, self.as_dict) if self.legacy else []
        return EventPlan(
            event_id=ev.id, event_json=self.event_json, event_name=ev.name,
            now_ms=runtime.now_ms(), runs=self.seeds,
            waiter_buckets=waiters.buckets_for(paths, self.as_dict), functions_version=version,
            waiter_paths=paths, dedupe_ttl_s=runtime.dedupe_ttl_s,
            stream_maxlen=runtime.events_maxlen,
            kick_template=runtime.kicker.script_template(),
            legacy_waiters=tuple(legacy), legacy_checked=self.legacy is not None,
            keep_queue=self.keep_queue,
        )  # fmt: skip

    def learn(self, outcome: Acceptance) -> None:
        """Remember the waiters' paths the script reported."""
        if outcome.state == "stale_paths":
            self.runtime.waiter_paths.learn(self.ev.name, outcome.waiter_paths)

    def result(self) -> PublishResult:
        """The result of the accepted plan."""
        return PublishResult(
            event_id=self.ev.id, duplicate=False, run_ids=tuple(s.id for s in self.seeds)
        )

    def _seeds(self, specs: list[FunctionSpec]) -> list[RunSeed]:
        if self.target is None:
            return [_seed(s, self.ev.id, self.as_dict) for s in specs if s.matches(self.as_dict)]
        spec = next((s for s in specs if s.id == self.target), None)
        if spec is None:
            if self.runtime.triggers.planned()[0] == NEVER_LOADED:
                return []  # the script will report the table's version; then we know
            raise FunctionNotFoundError(f"no function with id {self.target!r} is registered")
        parent = self.parent
        link: dict[str, Any] = {"run_id": parent[0], "step": parent[1]} if parent else {}
        if link and self.detached:
            link["detached"] = True  # finish.lua wakes no parent for it
        parent_json = json.dumps(link) if link else ""
        return [_seed(spec, self.ev.id, self.as_dict, parent_json)]


def _duplicate(ev: Event) -> PublishResult:
    log.info("event %s (%s) already published; ignored", ev.id, ev.name)
    return PublishResult(event_id=ev.id, duplicate=True)
