"""Publishing events: validate, record once, fan out to matching functions, wake waiters."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import redis
from redis.asyncio import Redis as AsyncRedis

from harness.errors import BusUnavailableError, FunctionNotFoundError
from harness.events import Event, parse_event, validate_event
from harness.runtime import waiters
from harness.runtime.functions import FunctionSpec
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all, kick_all_async
from harness.runtime.ledger import RunSeed
from harness.runtime.replication import acknowledge

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
    )


def publish(
    event: Event | dict[str, Any],
    *,
    runtime: Runtime,
    target: str | None = None,
    parent: tuple[str, str] | None = None,
) -> PublishResult:
    """Publish an event: idempotent by event id for 24 hours.

    Validates it (`InvalidEventError` names every problem and nothing is recorded), appends
    it to the events stream, creates one run per matching function and kicks them, and
    resumes runs waiting for it. `target` runs exactly that function instead of fanning out
    (used for invocations); `parent` is (run_id, step_key) of the run waiting for the result.
    Raises `BusUnavailableError` when Redis fails; the event may or may not have been
    accepted, and publishing it again is safe.
    """
    try:
        return _publish(event, runtime, target, parent)
    except redis.RedisError as exc:
        raise BusUnavailableError("the event bus is unavailable") from exc


def _publish(
    event: Event | dict[str, Any],
    runtime: Runtime,
    target: str | None,
    parent: tuple[str, str] | None,
) -> PublishResult:
    ev = validate_event(event) if isinstance(event, Event) else parse_event(event)
    pipe = runtime.redis.pipeline(transaction=False)
    _lookups(pipe, runtime, ev.name)
    version, paths, legacy = pipe.execute()
    plan = _plan(runtime, ev, runtime.triggers.specs_at(version), paths, legacy, target, parent)
    accepted, kicks = runtime.ledger.accept_event(*plan.args, **plan.options)
    if not accepted:
        return _duplicate(ev)
    kick_all(runtime.kicker, kicks)
    return plan.result


async def publish_async(
    event: Event | dict[str, Any],
    *,
    runtime: Runtime,
) -> PublishResult:
    """`publish` for an event loop: every Redis call and kick goes through the runtime's async
    client (`Runtime.aredis`) and kicker, so the loop never blocks on I/O and no thread is
    involved. Same contract and errors as `publish`; fans out only (no `target`). With
    `runtime.wait_replicas` > 0 it returns once that many replicas hold the event, and raises
    `ReplicationTimeoutError` (a `BusUnavailableError`: the web answers 503) when fewer did
    (this needs `runtime.aredis`, which the assembled runtime always has)."""
    try:
        ev = validate_event(event) if isinstance(event, Event) else parse_event(event)
        if runtime.aredis is None:
            return _publish(ev, runtime, None, None)
        pipe = runtime.aredis.pipeline(transaction=False)
        _lookups(pipe, runtime, ev.name)
        version, paths, legacy = await pipe.execute()
        specs = await runtime.triggers.specs_at_async(version)
        plan = _plan(runtime, ev, specs, paths, legacy, None, None)
        if runtime.wait_replicas > 0:
            accepted = await _accept_replicated(runtime, runtime.aredis, plan)
        else:
            accepted, kicks = await runtime.ledger.accept_event_async(*plan.args, **plan.options)
            await kick_all_async(runtime.kicker, kicks)
        return plan.result if accepted else _duplicate(ev)
    except redis.RedisError as exc:
        raise BusUnavailableError("the event bus is unavailable") from exc


async def _accept_replicated(runtime: Runtime, aredis: AsyncRedis, plan: _Plan) -> bool:
    """Accept on one connection, kick, then WAIT on that connection for the replicas (see
    `harness.runtime.replication`). The kicks go out even when the WAIT then times out: the
    runs exist on the master, and if it survives they should not wait for the reaper."""
    async with aredis.client() as connection:
        accepted, kicks = await runtime.ledger.accept_event_async(
            *plan.args, **plan.options, client=connection
        )
        await kick_all_async(runtime.kicker, kicks)
        await acknowledge(
            connection, wrote=accepted, replicas=runtime.wait_replicas,
            timeout_ms=runtime.wait_timeout_ms, mark_key=runtime.keys.replication_mark,
        )  # fmt: skip
    return accepted


def _lookups(pipe: Any, runtime: Runtime, name: str) -> None:
    """What a publish reads first, in one round trip: the trigger table's version, the match
    paths of the name's waiters, and waiters recorded before they were indexed."""
    pipe.get(runtime.keys.functions_version)
    pipe.hkeys(runtime.keys.waiter_paths(name))
    pipe.hgetall(runtime.keys.waiters(name))


@dataclass(frozen=True)
class _Plan:
    """The arguments of `Ledger.accept_event` for one event, and the result if accepted."""

    args: tuple[Any, ...]
    options: dict[str, Any]
    result: PublishResult


def _plan(
    runtime: Runtime,
    ev: Event,
    specs: list[FunctionSpec],
    paths: list[str],
    legacy: dict[str, str],
    target: str | None,
    parent: tuple[str, str] | None,
) -> _Plan:
    as_dict = ev.model_dump(mode="json")
    if target is not None:
        spec = next((s for s in specs if s.id == target), None)
        if spec is None:
            raise FunctionNotFoundError(f"no function with id {target!r} is registered")
        parent_json = json.dumps({"run_id": parent[0], "step": parent[1]}) if parent else ""
        seeds = [_seed(spec, ev.id, as_dict, parent_json)]
    else:
        seeds = [_seed(s, ev.id, as_dict) for s in specs if s.matches(as_dict)]
    args = (
        ev.id, json.dumps(as_dict, separators=(",", ":")), ev.name, runtime.now_ms(), seeds,
        waiters.buckets_for(paths, as_dict),
    )  # fmt: skip
    options = {
        "legacy_waiters": waiters.legacy_matches(legacy, as_dict) if legacy else [],
        "dedupe_ttl_s": runtime.dedupe_ttl_s,
        "stream_maxlen": runtime.events_maxlen,
    }
    result = PublishResult(event_id=ev.id, duplicate=False, run_ids=tuple(s.id for s in seeds))
    return _Plan(args, options, result)


def _duplicate(ev: Event) -> PublishResult:
    log.info("event %s (%s) already published; ignored", ev.id, ev.name)
    return PublishResult(event_id=ev.id, duplicate=True)
