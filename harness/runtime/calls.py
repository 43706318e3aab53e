"""Offloaded calls: a slow call a run parks on while a gateway makes it, holding no worker.

A step's function asks for a call (`Step.offload`); the run records the request and parks,
like a sleep (`lua/call_park.lua`). A gateway (any process; the engine knows none) takes due
calls of its service under a lease (`take`: those whose lease ran out, then new ones in
arrival order), renews the lease while it works and learns which
calls to abort (`keep`), and records the outcome (`settle`), which resumes the run. The run's
replay asks for the same call again and gets the outcome without anything being made twice.

Wake tokens, so gateways need not poll: each call offered (or handed back) pushes one on a
short list per service, and a take leaves one exactly while calls are left to take; a gateway
with room waits on the list (`AsyncCallBoard.wait`), and a token wakes one gateway. A token
is only a hint: the take decides, so a lost or extra token delays or wastes one look, never
loses a call nor takes one twice.

Exactly once, by the call's token: each take of a call bumps it, so when a gateway dies
mid-call its lease runs out, another takes the call under a new token, and the dead one's
late answer is refused; an outcome once recorded is never replaced, and a call that has one
is never taken again. A call whose run stopped waiting on it (cancelled, ended) is dropped.

Liveness: a serving gateway beats (`beat`) every `GATEWAY_BEAT_S`; one silent for
`GATEWAY_TTL_S` counts as gone, so calls that wait while no gateway beats are visible
(`harness.runtime.call_health`), whether the gateway's thread died or none was started.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import redis
from redis.asyncio import Redis as AsyncRedis

import harness.runtime.scripts as scripts
from harness.runtime.bus_errors import on_bus, redis_errors
from harness.runtime.keys import Keys
from harness.runtime.kicker import Kick


@dataclass(frozen=True)
class TakenCall:
    """A call a gateway now holds: its id, its lease's `token` and the `request` (JSON text
    the run recorded)."""

    call_id: str
    token: str
    request: str


KEEP = 1
"""`CallBoard.keep`: the lease is renewed, go on."""
LOST = 0
"""`CallBoard.keep`: another gateway holds the call now, or it is settled: stop quietly."""
ABORT = 2
"""`CallBoard.keep`: the run no longer waits on the call (cancelled, ended): stop it."""
GATEWAY_BEAT_S = 2.0
"""How often a serving gateway says it is alive (`beat`), in seconds."""
GATEWAY_TTL_S = 10.0
"""A gateway whose last beat is older than this is gone, in seconds."""


class CallBoard:
    """The offloaded calls in Redis (one method per script in `lua/call_*.lua`). Thread-safe;
    every method raises `BusUnavailableError` when Redis fails."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys
        self._park = scripts.load(client, "call_park")
        self._take = scripts.load(client, "call_take")
        self._keep = scripts.load(client, "call_keep")
        self._settle = scripts.load(client, "call_settle")

    @on_bus("park the run on its call")
    def park(
        self,
        run_id: str,
        epoch: str,
        now_ms: int,
        *,
        step_key: str,
        call_id: str,
        service: str,
        request: str,
        keep_s: int,
    ) -> tuple[int, int]:
        """Record call `call_id` of `service` (once; kept `keep_s` seconds), queue it and
        park the run at `step_key`, releasing its lease. Returns (1 parked, with the
        journal's version), (2, 0) when the outcome is already recorded (nothing parked) or
        (0, 0) when the epoch is stale."""
        code, version = self._park(
            args=[
                self.keys.prefix, run_id, epoch, now_ms, step_key, call_id, service, request,
                keep_s,
            ]
        )  # fmt: skip
        return int(code), int(version)

    @on_bus("take offloaded calls")
    def take(
        self, service: str, owner: str, now_ms: int, lease_ms: int, limit: int
    ) -> list[TakenCall]:
        """Up to `limit` due calls of `service`, each now leased to `owner` for `lease_ms`."""
        if limit <= 0:
            return []
        return _taken(self._take(args=[self.keys.prefix, service, owner, now_ms, lease_ms, limit]))

    @on_bus("renew offloaded calls")
    def keep(
        self, service: str, now_ms: int, lease_ms: int, held: list[tuple[str, str]]
    ) -> list[int]:
        """Renew the leases of the `held` (call id, token) pairs: for each, `KEEP`, `LOST`
        or `ABORT` (see those). A `lease_ms` of 0 hands the calls back: any gateway may
        take them at once (a gateway that stops)."""
        if not held:
            return []
        return _codes(self._keep(args=_keep_args(self.keys, service, now_ms, lease_ms, held)))

    @on_bus("record the call's outcome")
    def settle(
        self, call_id: str, token: str, outcome: dict[str, Any], now_ms: int, template: str = ""
    ) -> tuple[bool, tuple[Kick, ...]]:
        """Record `outcome` (JSON-able) as the call's, once, and resume its waiting run.
        Returns (False, ()) when refused: an outcome is there, or `token` is not the latest
        lease's. With a `template` (the kicker's `script_template()`) the kick is pushed by
        the script; else returned, to send."""
        return _settled(
            self._settle(
                args=[self.keys.prefix, call_id, token, json.dumps(outcome), now_ms, template]
            )
        )

    @on_bus("read the calls' stops")
    def stops(self) -> int:
        """How many runs have stopped waiting on a call other than by its outcome (see
        `Keys.call_stops`): when it moves, a gateway's calls may need aborting."""
        return int(self.redis.get(self.keys.call_stops) or 0)

    @on_bus("read the call's outcome")
    def outcome(self, call_id: str) -> dict[str, Any] | None:
        """The call's recorded outcome, or None when it has none (yet)."""
        raw = self.redis.hget(self.keys.call(call_id), "outcome")
        return None if raw is None else json.loads(str(raw))

    @on_bus("count offloaded calls")
    def due(self, service: str, now_ms: int) -> int:
        """How many calls of `service` a gateway could take now (at most: some offered may
        have been dropped since, which a take passes over)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.llen(self.keys.calls(service))
        pipe.zcount(self.keys.call_leases(service), "-inf", now_ms)
        offered, expired = pipe.execute()
        return int(offered) + int(expired)

    @on_bus("record the gateway as alive")
    def beat(self, service: str, gateway: str, now_ms: int) -> None:
        """Record that `gateway` serves `service` now (see `GATEWAY_TTL_S`), forgetting
        gateways long gone (so restarts do not pile up), in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        _beat_into(pipe, self.keys.call_gateways(service), gateway, now_ms)
        pipe.execute()

    def leave(self, service: str, gateway: str) -> None:
        """`gateway` no longer serves `service` (it stops). Never raises: the beat ages out."""
        with contextlib.suppress(redis.RedisError):
            self.redis.zrem(self.keys.call_gateways(service), gateway)


class AsyncCallBoard:
    """A gateway's side of `CallBoard` (`take`, `keep`, `settle`, `due`: the same scripts, the
    same contracts) on an async client of one event loop, so the loop goes on streaming while
    Redis answers, and `wait`, how a gateway sleeps until a call is offered. Every method
    raises `BusUnavailableError` when Redis fails."""

    def __init__(self, client: AsyncRedis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys
        self._take = scripts.load_async(client, "call_take")
        self._keep = scripts.load_async(client, "call_keep")
        self._settle = scripts.load_async(client, "call_settle")

    async def wait(self, service: str, timeout_s: float) -> bool:
        """Wait up to `timeout_s` seconds (one blocking round trip) for a wake token of
        `service`: a call offered or handed back since the last take. True when one came;
        a token wakes one waiting gateway, and one may come when a take left calls behind."""
        with redis_errors("wait for offloaded calls"):
            got = await self.redis.blpop([self.keys.call_wake(service)], max(timeout_s, 0.001))
        return got is not None

    async def take(
        self, service: str, owner: str, now_ms: int, lease_ms: int, limit: int
    ) -> list[TakenCall]:
        """`CallBoard.take`."""
        if limit <= 0:
            return []
        with redis_errors("take offloaded calls"):
            flat = await self._take(
                args=[self.keys.prefix, service, owner, now_ms, lease_ms, limit]
            )
        return _taken(flat)

    async def keep(
        self, service: str, now_ms: int, lease_ms: int, held: list[tuple[str, str]]
    ) -> list[int]:
        """`CallBoard.keep`."""
        if not held:
            return []
        with redis_errors("renew offloaded calls"):
            out = await self._keep(args=_keep_args(self.keys, service, now_ms, lease_ms, held))
        return _codes(out)

    async def stops(self) -> int:
        """`CallBoard.stops`."""
        with redis_errors("read the calls' stops"):
            return int(await self.redis.get(self.keys.call_stops) or 0)

    async def settle(
        self, call_id: str, token: str, outcome: dict[str, Any], now_ms: int, template: str = ""
    ) -> tuple[bool, tuple[Kick, ...]]:
        """`CallBoard.settle`."""
        args: list[str | int] = [
            self.keys.prefix,
            call_id,
            token,
            json.dumps(outcome),
            now_ms,
            template,
        ]
        with redis_errors("record the call's outcome"):
            return _settled(await self._settle(args=args))

    async def due(self, service: str, now_ms: int) -> int:
        """`CallBoard.due`."""
        with redis_errors("count offloaded calls"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.llen(self.keys.calls(service))
                pipe.zcount(self.keys.call_leases(service), "-inf", now_ms)
                offered, expired = await pipe.execute()
        return int(offered) + int(expired)

    async def beat(self, service: str, gateway: str, now_ms: int) -> None:
        """`CallBoard.beat`."""
        with redis_errors("record the gateway as alive"):
            async with self.redis.pipeline(transaction=False) as pipe:
                _beat_into(pipe, self.keys.call_gateways(service), gateway, now_ms)
                await pipe.execute()

    async def leave(self, service: str, gateway: str) -> None:
        """`CallBoard.leave`."""
        with contextlib.suppress(redis.RedisError):
            await self.redis.zrem(self.keys.call_gateways(service), gateway)

    async def aclose(self) -> None:
        """Close the client and its connections, on the loop that used them. Idempotent."""
        await self.redis.aclose(close_connection_pool=True)


def _beat_into(pipe: Any, key: str, gateway: str, now_ms: int) -> None:
    """A gateway's beat, queued on a pipeline (sync or async: the same calls)."""
    pipe.zadd(key, {gateway: now_ms})
    pipe.zremrangebyscore(key, "-inf", now_ms - 6 * int(GATEWAY_TTL_S * 1000))


def _keep_args(
    keys: Keys, service: str, now_ms: int, lease_ms: int, held: list[tuple[str, str]]
) -> list[Any]:
    return [keys.prefix, service, now_ms, lease_ms, *(part for pair in held for part in pair)]


def _codes(out: list[Any]) -> list[int]:
    return [int(code) for code in out]


def _taken(flat: list[Any]) -> list[TakenCall]:
    return [
        TakenCall(str(flat[i]), str(flat[i + 1]), str(flat[i + 2])) for i in range(0, len(flat), 3)
    ]


def _settled(out: list[Any]) -> tuple[bool, tuple[Kick, ...]]:
    flat = out[1:]
    kicks = tuple(
        Kick(str(flat[i]), str(flat[i + 1]), int(flat[i + 2])) for i in range(0, len(flat) - 2, 3)
    )
    return bool(out[0]), kicks
