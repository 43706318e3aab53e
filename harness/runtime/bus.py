"""Publishing events: validate, record once, fan out to matching functions, wake waiters."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import redis

from harness.errors import BusUnavailableError, FunctionNotFoundError
from harness.events import Event, parse_event, validate_event
from harness.runtime.expressions import resolve_path
from harness.runtime.functions import FunctionSpec
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all
from harness.runtime.ledger import RunSeed

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


def _matching_waiters(waiters: dict[str, str], event: dict[str, Any]) -> list[str]:
    matched = []
    for run_id, waiter_json in waiters.items():
        waiter = json.loads(waiter_json)
        path = waiter.get("match")
        if path is None or resolve_path(f"event.{path}", event) == waiter.get("value"):
            matched.append(str(run_id))
    return matched


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
    as_dict = ev.model_dump(mode="json")
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.get(runtime.keys.functions_version)
    pipe.hgetall(runtime.keys.waiters(ev.name))
    version, waiters = pipe.execute()
    if target is not None:
        spec = next((s for s in runtime.triggers.specs_at(version) if s.id == target), None)
        if spec is None:
            raise FunctionNotFoundError(f"no function with id {target!r} is registered")
        parent_json = json.dumps({"run_id": parent[0], "step": parent[1]}) if parent else ""
        seeds = [_seed(spec, ev.id, as_dict, parent_json)]
    else:
        specs = runtime.triggers.specs_at(version)
        seeds = [_seed(s, ev.id, as_dict) for s in specs if s.matches(as_dict)]
    accepted, kicks = runtime.ledger.accept_event(
        ev.id,
        json.dumps(as_dict, separators=(",", ":")),
        ev.name,
        runtime.now_ms(),
        seeds,
        _matching_waiters(waiters, as_dict),
        dedupe_ttl_s=runtime.dedupe_ttl_s,
        stream_maxlen=runtime.events_maxlen,
    )
    if not accepted:
        log.info("event %s (%s) already published; ignored", ev.id, ev.name)
        return PublishResult(event_id=ev.id, duplicate=True)
    kick_all(runtime.kicker, kicks)
    return PublishResult(event_id=ev.id, duplicate=False, run_ids=tuple(s.id for s in seeds))
