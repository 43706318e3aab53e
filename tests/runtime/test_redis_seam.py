"""The Redis seam, proved for every store: whatever redis-py raises, ours leaves the runtime.

The targets are found, not listed: every public method of every class in `harness/runtime/`
and `harness/records/` built from a Redis client or a `Runtime` (the ledger, the trigger table,
the records' Redis stores, the runtime itself), and every public function there that takes a
`Runtime`. Each runs against a client whose every command fails with one redis-py error
family (the fake sits at the connection, so redis-py's own paths run: scripts' EVALSHA,
pipelines, pub/sub, the async client). A new method is covered the day it is written; a new
parameter type needs a sample below, and the test says so.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import pkgutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
import redis
import redis.asyncio
import redis.exceptions
import redis.sentinel
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

import harness.records as records_package
import harness.runtime as runtime_package
from harness.errors import HarnessError
from harness.events import REPLY_READY, ApprovalGiven, Destination, Event, ReplyReady
from harness.records.undelivered import UndeliveredReply
from harness.runtime.function_sources import Origin, RunFailure
from harness.runtime.functions import EventTrigger, FunctionRegistry, FunctionSpec
from harness.runtime.instance import Runtime
from harness.runtime.kicker import RecordingKicker
from harness.runtime.ledger import Claim, EventPlan, RunSeed
from harness.runtime.step_observers import CommittedStep

FAMILIES: list[type[redis.RedisError]] = [
    redis.ConnectionError,
    redis.TimeoutError,
    redis.ResponseError,
    redis.exceptions.BusyLoadingError,
    redis.ReadOnlyError,
    redis.AuthenticationError,
    redis.exceptions.NoPermissionError,
    redis.exceptions.OutOfMemoryError,
    redis.sentinel.MasterNotFoundError,
]

# Swallowing a Redis failure must be a documented contract ("never raises"), named here.
BEST_EFFORT = {
    "leave",  # the presence entry expires by itself
    "CallBoard.leave",  # a gateway's beat ages out by itself
    "AsyncCallBoard.leave",
}
# Loops and threads that survive outages by design (their passes are covered above).
NOT_CALLED = {"run_scheduler", "Heartbeat", "Fanout"}
# Built from a client or a runtime, but not a store: in-memory run state, and the replay that
# runs a handler against an in-memory copy of its journal (it sends Redis nothing).
NOT_STORES = {"RunState", "ReplayState", "replay"}


class _Failing:
    """Counts how often a command was sent, and fails each with a fresh `error`."""

    error: type[redis.RedisError] = redis.ConnectionError
    sent = 0

    @classmethod
    def fail(cls) -> redis.RedisError:
        cls.sent += 1
        return cls.error(f"injected {cls.error.__name__}")


class FailingConnection(redis.Connection):
    """A connection that is always up and whose every command fails."""

    def connect(self) -> None:
        return None

    def can_read(self, timeout: float | None = 0) -> bool:
        return False

    def send_packed_command(self, command: object, check_health: bool = True) -> None:
        raise _Failing.fail()


class FailingAsyncConnection(redis.asyncio.Connection):
    """`FailingConnection` for the async client."""

    async def connect(self) -> None:
        return None

    async def can_read(self) -> bool:
        return False

    async def can_read_destructive(self) -> bool:
        return False

    async def send_packed_command(self, command: object, check_health: bool = True) -> None:
        raise _Failing.fail()


def _clients(with_async: bool) -> tuple[redis.Redis, redis.asyncio.Redis | None]:
    no_retry = Retry(NoBackoff(), 0)
    sync = redis.Redis(
        connection_pool=redis.ConnectionPool(
            connection_class=FailingConnection, decode_responses=True, retry=no_retry
        )
    )
    if not with_async:
        return sync, None
    aclient = redis.asyncio.Redis(
        connection_pool=redis.asyncio.ConnectionPool(
            connection_class=FailingAsyncConnection,
            decode_responses=True,
            # redis-py 8.2 warns (an error here) when an async pool is given a sync Retry
            retry=AsyncRetry(NoBackoff(), 0),
        )
    )
    return sync, aclient


# -- finding the targets -----------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One public method of a store class (`owner` set), or one runtime function."""

    name: str
    module: str
    owner: str | None
    attribute: str

    def resolve(self, rt: Runtime) -> Callable[..., Any]:
        found = getattr(importlib.import_module(self.module), self.owner or self.attribute)
        if self.owner is None:
            return found  # type: ignore[no-any-return]
        instance = rt if found is Runtime else _build(found, rt)
        return getattr(instance, self.attribute)  # type: ignore[no-any-return]


def _runtime_modules() -> Iterator[Any]:
    for package in (runtime_package, records_package):
        for info in pkgutil.iter_modules(package.__path__):
            yield importlib.import_module(f"{package.__name__}.{info.name}")


def _takes_redis(params: list[inspect.Parameter]) -> bool:
    return bool(params) and params[0].annotation in ("redis.Redis", "AsyncRedis", "Runtime")


def _targets() -> list[Target]:
    found: list[Target] = []
    for module in _runtime_modules():
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if name in NOT_CALLED or name in NOT_STORES:
                continue
            if inspect.isclass(obj):
                params = list(inspect.signature(obj.__init__).parameters.values())[1:]
                if not _takes_redis(params):
                    continue
                fields = (
                    {f.name for f in dataclasses.fields(obj)}
                    if dataclasses.is_dataclass(obj)
                    else set()
                )
                for attribute, member in sorted(vars(obj).items()):
                    if attribute.startswith("_") or not inspect.isfunction(member):
                        continue
                    if attribute in fields:  # a field holding a function, not a method
                        continue
                    found.append(Target(f"{name}.{attribute}", module.__name__, name, attribute))
            elif inspect.isfunction(obj):
                params = list(inspect.signature(obj).parameters.values())
                if any(p.annotation == "Runtime" for p in params):
                    found.append(Target(name, module.__name__, None, name))
    return found


TARGETS = _targets()


# -- arguments ---------------------------------------------------------------------------


def _spec() -> FunctionSpec:
    return FunctionSpec(id="fn", triggers=(EventTrigger(name="app/x"),))


SAMPLES: dict[str, Callable[[], Any]] = {
    "str": lambda: "x",
    "str | None": lambda: "x",
    "int": lambda: 1,
    "int | None": lambda: 1,
    "float": lambda: 1.0,
    "bool": lambda: False,
    "list[str]": lambda: ["x"],
    "list[tuple[str, str]]": lambda: [("x", "1")],
    "Sequence[str]": lambda: ["x"],
    "ScopeId": lambda: ("chat", "x"),
    "Sequence[ScopeId]": lambda: [("chat", "x")],
    "CommittedStep": lambda: CommittedStep(
        run_id="r",
        function_id="fn",
        event={},
        step_key="think:0",
        usage={"model": "m", "in": 1, "out": 1},
        ended_ms=2,
        started_ms=1,
    ),
    "Collection[str]": lambda: ["x"],
    "Iterable[str]": lambda: ["x"],
    "tuple[str, ...]": lambda: ("x",),
    "date": lambda: date(2026, 1, 1),
    "dict[str, Any]": lambda: {"model": "m", "in": 1, "out": 1},
    "Mapping[str, Any]": lambda: {"model": "m", "in": 1, "out": 1},
    "Mapping[str, Mapping[str, Any]]": lambda: {"s": {"k": "run", "v": 1}},
    "Iterable[FunctionSpec]": lambda: [_spec()],
    "list[FunctionSpec] | None": lambda: None,
    "dict[str, tuple[FunctionSpec, Origin]]": lambda: {"fn": (_spec(), Origin(source="s"))},
    "list[LoadError]": lambda: [],
    "RunFailure": lambda: RunFailure(function_id="fn", run_id="r", error="e", at_ms=1),
    "UndeliveredReply": lambda: _undelivered(),
    "Claim": lambda: Claim(state="ok", journal={}, journal_complete=False),
    "Event | dict[str, Any]": lambda: {"name": "app/x"},
    "ApprovalGiven": lambda: _approval_given(),
    "Others": lambda: "none",
    "EventPlan": lambda: _plan(),
    "redis.asyncio.Redis | None": lambda: None,
    "threading.Event": threading.Event,
}


def _plan() -> EventPlan:
    seed = RunSeed(id="r", function_id="fn", queue="q")
    return EventPlan(
        event_id="e", event_json="{}", event_name="app/x", now_ms=1, runs=[seed],
        waiter_buckets=[], functions_version="1", waiter_paths=(), dedupe_ttl_s=60,
        stream_maxlen=10,
    )  # fmt: skip


def _undelivered() -> UndeliveredReply:
    reply = ReplyReady(response="hi", channel="c", destination=Destination(chat_id="1"), run_id="r")
    event: dict[str, object] = {"name": REPLY_READY, "data": reply.model_dump(mode="json")}
    return UndeliveredReply(reply_id="r", run_id="r", channel="c", chat_id="1", event=event)


def _approval_given() -> ApprovalGiven:
    return ApprovalGiven(
        approval_id="a", decision="approve", subject="s", channel="c",
        destination=Destination(chat_id="1"),
    )  # fmt: skip


def _arguments(fn: Callable[..., Any], rt: Runtime) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.default is not inspect.Parameter.empty:
            continue
        annotation = str(param.annotation)
        if annotation == "Runtime":
            value: Any = rt
        elif annotation in ("redis.Redis", "Keys"):
            value = rt.redis if annotation == "redis.Redis" else rt.keys
        elif annotation == "AsyncRedis":  # a store of one event loop's (async methods only)
            value = rt.aredis
        elif annotation in SAMPLES:
            value = SAMPLES[annotation]()
        else:
            pytest.fail(f"{fn.__qualname__}: add a sample for {param.name}: {annotation}")
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[param.name] = value
        else:
            args.append(value)
    return args, kwargs


def _build(cls: type, rt: Runtime) -> Any:
    args, kwargs = _arguments(cls, rt)
    return cls(*args, **kwargs)


# -- the test ------------------------------------------------------------------------------


def _call(target: Target) -> tuple[BaseException | None, int]:
    """Run `target` on a failing runtime; returns (what it raised, commands sent)."""

    async def call_async() -> BaseException | None:
        sync, aclient = _clients(with_async=True)
        rt = Runtime(redis=sync, aredis=aclient, kicker=RecordingKicker(), registry=REGISTRY)
        try:
            fn = target.resolve(rt)
            args, kwargs = _arguments(fn, rt)
            await fn(*args, **kwargs)
        except Exception as exc:
            return exc
        finally:
            await rt.aclose()
            sync.close()
        return None

    def call_sync() -> BaseException | None:
        sync, _ = _clients(with_async=False)
        rt = Runtime(redis=sync, kicker=RecordingKicker(), registry=REGISTRY)
        try:
            fn = target.resolve(rt)
            args, kwargs = _arguments(fn, rt)
            fn(*args, **kwargs)
        except Exception as exc:
            return exc
        finally:
            sync.close()
        return None

    _Failing.sent = 0
    member = getattr(importlib.import_module(target.module), target.owner or target.attribute)
    if target.owner is not None:
        member = getattr(member, target.attribute)
    raised = asyncio.run(call_async()) if inspect.iscoroutinefunction(member) else call_sync()
    return raised, _Failing.sent


REGISTRY = FunctionRegistry()


@pytest.fixture(params=FAMILIES, ids=lambda family: family.__name__)
def family(request: pytest.FixtureRequest) -> Iterator[type[redis.RedisError]]:
    _Failing.error = request.param
    yield request.param
    _Failing.error = redis.ConnectionError


@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.name)
def test_store_method_turns_every_redis_error_into_ours(
    target: Target, family: type[redis.RedisError]
) -> None:
    # Given a Redis whose every command fails with one redis-py error family
    # When a store method (or runtime function) is called on it
    raised, sent = _call(target)
    # Then no redis error leaves: ours does, with redis's as its cause
    assert not isinstance(raised, redis.RedisError), (
        f"{target.name} let a raw {type(raised).__name__} out: map it with @on_bus or "
        "redis_errors (harness/runtime/bus_errors.py)"
    )
    if raised is not None:
        assert isinstance(raised, HarnessError), f"{target.name} raised {raised!r}"
        assert isinstance(raised.__cause__, family), f"{target.name}: cause {raised.__cause__!r}"
    elif sent:
        # and a method that reached Redis and still returned swallows failures on purpose
        assert target.name in BEST_EFFORT, (
            f"{target.name} reached Redis, which failed, and returned normally: raise "
            "BusUnavailableError, or document it as best effort and list it in BEST_EFFORT"
        )


def test_seam_finds_the_stores_and_their_methods() -> None:
    # Given the targets found in harness/runtime and harness/records
    names = {target.name for target in TARGETS}
    # Then the ledger's script methods, the stores and the runtime functions are among them
    expected = {
        "Ledger.claim", "Ledger.commit_step", "Ledger.accept_event_async", "Ledger.reap",
        "TriggerTable.specs_async", "RedisApprovalStore.decide", "RedisAccessStore.approve",
        "RedisUsageStore.add", "RedisCursors.get", "RedisDeliveryRecords.begin",
        "RedisDraftRecords.get", "RedisUndeliveredReplies.record", "Broadcast.subscribe",
        "Runtime.ping", "publish", "publish_async", "fire_due_ticks", "replace_source",
        "live_members_async", "redeliver_chat", "AsyncCallBoard.wait", "AsyncCallBoard.take",
    }  # fmt: skip
    assert expected <= names, sorted(expected - names)
    # and every method allowed to swallow a failure still exists
    assert names >= BEST_EFFORT, sorted(BEST_EFFORT - names)


def test_event_sample_is_a_valid_event() -> None:
    # the publish sample must pass validation, or publish would fail before reaching Redis
    assert Event.model_validate({"name": "app/x"}).name == "app/x"
