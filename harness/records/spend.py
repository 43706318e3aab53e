"""Today's spend per person, per chat and per agent: what a budget is checked against.

`SpendStore` is the contract, `RedisSpendStore` the Redis implementation, `MemorySpendStore`
its in-memory twin. The budget gate (`harness.agent.budget_gate`) adds each model call's cost
and tokens to every scope of its turn (a durable step, so once per call), reads them before
the next call, and notes the one warning per scope and day; `harness budget raise` adds to a
scope's limit for the day (`harness.agent.budget_limits.raise_today`).

In Redis, `{prefix}:spend:{YYYY-MM-DD}` (hash, UTC days) maps `scope|id|metric` to a count,
where metric is `usd` (micro-dollars), `tokens`, `raise_usd` (micro-dollars), `raise_tokens`
or a notice mark (`warned`, `asked`). Each day's hash expires `RETENTION_S` after it was
last written: budgets are daily, so only today's is read; the few days kept are for a person
asking why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import redis
from pydantic import BaseModel

from harness.runtime.bus_errors import on_bus
from harness.runtime.instance import Runtime
from harness.runtime.keys import Keys

Scope = Literal["person", "chat", "agent"]
SCOPES: tuple[Scope, ...] = ("person", "chat", "agent")
ScopeId = tuple[Scope, str]
"""One scope of a turn: `("chat", "telegram:42")`, `("agent", "main")`."""
Notice = Literal["warned", "asked"]
"""What is said at most once per scope and day: the 80% warning, the owner asked to raise."""

RETENTION_S = 8 * 86_400
"""How long a day's spend is kept after its last write."""

_MICRO = 1_000_000
_SEP = "|"
_METRICS = ("usd", "tokens", "raise_usd", "raise_tokens", "warned", "asked")


class ScopeSpend(BaseModel, frozen=True):
    """What one scope spent on one UTC day, and how much its limits were raised that day."""

    scope: Scope
    id: str
    usd: float = 0.0
    tokens: int = 0
    raised_usd: float = 0.0
    raised_tokens: int = 0


class SpendStore(Protocol):
    """Adds and reads per-day spend per scope. The Redis implementation raises
    `BusUnavailableError` when Redis fails."""

    def add(self, day: str, scopes: Sequence[ScopeId], *, usd: float, tokens: int) -> None:
        """Add one model call's cost and tokens to each of `scopes` on `day`."""
        ...

    def read(self, day: str, scopes: Sequence[ScopeId] | None = None) -> list[ScopeSpend]:
        """Each of `scopes` (all scopes written that day when None) on `day`, by scope and
        id; a scope with nothing recorded reads as zeros."""
        ...

    def raise_limit(self, day: str, scope: ScopeId, *, usd: float, tokens: int) -> None:
        """Add `usd` and `tokens` to `scope`'s limits for `day` only."""
        ...

    def first_notice(self, day: str, scope: ScopeId, notice: Notice = "warned") -> bool:
        """True the first time it is asked for `notice` of `scope` on `day`, False ever after
        (atomic)."""
        ...


def _field(scope: ScopeId, metric: str) -> str:
    return _SEP.join((scope[0], scope[1].replace(_SEP, "/"), metric))


def _spend(scope: ScopeId, counts: dict[str, int]) -> ScopeSpend:
    return ScopeSpend(
        scope=scope[0], id=scope[1],
        usd=counts.get("usd", 0) / _MICRO, tokens=counts.get("tokens", 0),
        raised_usd=counts.get("raise_usd", 0) / _MICRO,
        raised_tokens=counts.get("raise_tokens", 0),
    )  # fmt: skip


def _micro(usd: float) -> int:
    return round(usd * _MICRO)


class RedisSpendStore:
    """`SpendStore` as one Redis hash per UTC day. Thread-safe; one round trip per call."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys

    def _key(self, day: str) -> str:
        return f"{self.keys.prefix}:spend:{day}"

    @on_bus("record spend")
    def add(self, day: str, scopes: Sequence[ScopeId], *, usd: float, tokens: int) -> None:
        """See `SpendStore.add`."""
        self._incr(day, scopes, {"usd": _micro(usd), "tokens": tokens})

    @on_bus("raise a budget")
    def raise_limit(self, day: str, scope: ScopeId, *, usd: float, tokens: int) -> None:
        """See `SpendStore.raise_limit`."""
        self._incr(day, [scope], {"raise_usd": _micro(usd), "raise_tokens": tokens})

    def _incr(self, day: str, scopes: Sequence[ScopeId], counts: dict[str, int]) -> None:
        key = self._key(day)
        pipe = self.redis.pipeline(transaction=False)
        for scope in scopes:
            for metric, count in counts.items():
                if count:
                    pipe.hincrby(key, _field(scope, metric), count)
        pipe.expire(key, RETENTION_S)
        pipe.execute()

    @on_bus("read spend")
    def read(self, day: str, scopes: Sequence[ScopeId] | None = None) -> list[ScopeSpend]:
        """See `SpendStore.read`."""
        grouped: dict[ScopeId, dict[str, int]] = {}
        if scopes is None:
            for field, count in self.redis.hgetall(self._key(day)).items():
                scope, ident, metric = str(field).split(_SEP)  # ids hold no `|` (`_field`)
                if scope in SCOPES:
                    grouped.setdefault((scope, ident), {})[metric] = int(count)
        else:
            fields = [_field(s, m) for s in scopes for m in _METRICS]
            values = self.redis.hmget(self._key(day), fields) if fields else []
            per = len(_METRICS)
            for i, wanted in enumerate(scopes):
                found = values[i * per : (i + 1) * per]
                counts = {m: int(v) for m, v in zip(_METRICS, found, strict=True) if v is not None}
                grouped.setdefault(wanted, {}).update(counts)
        return [_spend(scope, counts) for scope, counts in sorted(grouped.items())]

    @on_bus("note a budget notice")
    def first_notice(self, day: str, scope: ScopeId, notice: Notice = "warned") -> bool:
        """See `SpendStore.first_notice`."""
        key = self._key(day)
        pipe = self.redis.pipeline(transaction=False)
        pipe.hsetnx(key, _field(scope, notice), 1)
        pipe.expire(key, RETENTION_S)
        first, _ = pipe.execute()
        return bool(first)


class MemorySpendStore:
    """`SpendStore` in one process's memory, for tests. Keeps everything (no expiry)."""

    def __init__(self) -> None:
        self._days: dict[str, dict[ScopeId, dict[str, int]]] = {}

    def _incr(self, day: str, scopes: Sequence[ScopeId], counts: dict[str, int]) -> None:
        for scope in scopes:
            kept = self._days.setdefault(day, {}).setdefault(scope, {})
            for metric, count in counts.items():
                if count:
                    kept[metric] = kept.get(metric, 0) + count

    def add(self, day: str, scopes: Sequence[ScopeId], *, usd: float, tokens: int) -> None:
        """See `SpendStore.add`."""
        self._incr(day, scopes, {"usd": _micro(usd), "tokens": tokens})

    def raise_limit(self, day: str, scope: ScopeId, *, usd: float, tokens: int) -> None:
        """See `SpendStore.raise_limit`."""
        self._incr(day, [scope], {"raise_usd": _micro(usd), "raise_tokens": tokens})

    def read(self, day: str, scopes: Sequence[ScopeId] | None = None) -> list[ScopeSpend]:
        """See `SpendStore.read`."""
        kept = self._days.get(day, {})
        wanted = sorted(kept) if scopes is None else sorted(set(scopes))
        return [_spend(scope, kept.get(scope, {})) for scope in wanted]

    def first_notice(self, day: str, scope: ScopeId, notice: Notice = "warned") -> bool:
        """See `SpendStore.first_notice`."""
        kept = self._days.setdefault(day, {}).setdefault(scope, {})
        first = notice not in kept
        kept[notice] = 1
        return first


def spend_store(runtime: Runtime) -> RedisSpendStore:
    """Today's spend per scope on `runtime`'s Redis."""
    return RedisSpendStore(runtime.redis, runtime.keys)
