"""The model gateway: makes offloaded model calls (`MODEL_CALLS=gateway`) on one event loop.

A run's think step parks on its model call (`harness.agent.model_calls`) and frees its worker
thread. A gateway, an asyncio loop on a thread of each worker process (`start`), takes due
calls from Redis under a lease (`harness.runtime.calls`), at most `concurrency` at once (the
rest wait in Redis: a call queues, never fails, for want of a slot), makes each on the
SDK's async client, sending the request the run's worker rendered (`CallHead.wire`), streams
its text to the run's draft as a worker would (what came since the last tick, once per tick:
`LiveText.flush`), and records the outcome once, which resumes the run on any worker.

Woken, not polling: parking a call pushes a wake token, and a gateway with room waits on
those (`AsyncCallBoard.wait`, one blocking read), so a new call is taken within a round trip,
by one gateway per token; a gateway whose slots are full waits for one of its calls to end
instead. With nothing in flight a gateway makes one round trip per `idle_s` (1 s): the wait
that times out, then a take, which finds calls due again without a token (a dead gateway's,
once its lease ran out). With calls in flight it looks every `poll_s` (50 ms): one round trip
reads the counter of runs that stopped waiting on a call other than by its outcome
(`Keys.call_stops`, bumped by the run scripts); when it moved, and every third of a lease
anyway, one round trip renews the leases of the calls in flight and says which runs stopped
waiting (cancelled, ended): those streams are aborted at once, as a worker's cancel watcher
aborts an inline call. (Renewing every call every tick cost Redis three commands per call
each 50 ms: two thirds of its commands at 200 calls in flight.) A steering message does
not abort a call, inline or here: it is taken before the next think. A gateway that dies stops
renewing; after its lease another gateway makes the call again, and the dead one's answer,
should it come, is refused. A gateway that stops hands its calls back, which wakes another.

A serving gateway beats every `GATEWAY_BEAT_S` (`CallBoard.beat`) and leaves when it stops, so
calls that wait while no gateway is alive (its thread died, a worker started without one) are
reported (`harness.runtime.call_health`: `/metrics`, the console's health page).

Redis is spoken to on an async client of the gateway's own loop (`Runtime.aredis_factory`), so
streams go on while Redis answers; a runtime without one (some tests) is spoken to with its
blocking client and polled every `poll_s`, as before the wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from harness.agent.gateway_board import BlockingBoard, GatewayBoard
from harness.agent.gateway_texts import StreamedTexts
from harness.agent.model_calls import MODEL_SERVICE, CallHead, ModelCallRequest, outcome_of
from harness.errors import BusUnavailableError
from harness.llm.factory import build_named, sdk_modules
from harness.llm.provider import AsyncModelProvider, ModelProvider, PreparedModelProvider
from harness.llm.types import AssistantTurn
from harness.runtime.calls import GATEWAY_BEAT_S, KEEP, AsyncCallBoard, TakenCall
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all
from harness.settings import Settings

log = logging.getLogger(__name__)

POLL_S = 0.05
"""With calls in flight: how often a gateway looks whether a run stopped waiting on a call
(one counter read; how soon a cancelled run's stream is aborted) and takes calls offered
meanwhile, in seconds."""
IDLE_S = 1.0
"""With nothing in flight: how often a gateway that no wake token woke looks for calls due
again (a dead gateway's after its lease), in seconds."""


@dataclass
class _InFlight:
    token: str
    task: asyncio.Task[None]


@dataclass
class ModelGateway:
    """One process's model gateway (see the module docstring). `concurrency` bounds the
    calls in flight; a lease lasts the runtime's `lease_ttl`. `made` counts the calls made,
    `peak` the most in flight at once, `failed` the round trips to Redis that failed."""

    runtime: Runtime
    settings: Settings
    concurrency: int = 256
    poll_s: float = POLL_S
    idle_s: float = IDLE_S
    owner: str = ""
    made: int = 0
    peak: int = 0
    failed: int = 0
    _inflight: dict[str, _InFlight] = field(default_factory=dict)
    _providers: dict[tuple[str, str, float | None], AsyncModelProvider] = field(
        default_factory=dict
    )
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _killed: bool = False
    _room: int | None = None  # calls `serve` may still take (None: no bound)
    _loop: asyncio.AbstractEventLoop | None = None  # `serve`'s, and its events':
    _stopping: asyncio.Event | None = None  # set by `stop`, from any thread
    _freed: asyncio.Event | None = None  # set when a call ends
    _renew_at: float = 0.0  # monotonic time of the next renewal of the calls in flight
    _stops_seen: int | None = None  # `board.stops()` at the last renewal
    _beat_at: float | None = None  # monotonic time of the next beat (None: no beats, a drain)

    def __post_init__(self) -> None:
        self.owner = self.owner or f"gateway:{self.runtime.new_owner()}"
        self._texts = StreamedTexts(self.runtime)

    @property
    def lease_ms(self) -> int:
        """How long a taken call is this gateway's without a renewal."""
        return int(self.runtime.lease_ttl * 1000)

    @property
    def renew_s(self) -> float:
        """How often the calls in flight are renewed even when no run stopped waiting: three
        times per lease, so one late renewal does not lose them."""
        return self.runtime.lease_ttl / 3

    def start(self) -> None:
        """Serve on a daemon thread of its own until `stop`, having loaded the SDKs of the
        providers configured here (`sdk_modules`) on that thread first: imported by a first
        call instead, an SDK (seconds on a busy machine) would hold the loop, and every
        stream and lease renewal with it. Idempotent."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="model-gateway", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for name in sdk_modules(self.settings):
            try:
                importlib.import_module(name)
            except ImportError as exc:  # the first call says so, as the call's failure
                log.warning("the model gateway could not load %s: %s", name, exc)
        asyncio.run(self.serve())

    def alive(self) -> bool:
        """True while the thread `start` began runs and no `stop` was asked for: what a
        worker's liveness requires of its gateway (`harness.fleet.liveness.require_alive`).
        Never raises."""
        thread = self._thread
        return thread is not None and thread.is_alive() and not self._stop.is_set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking calls, hand those in flight back (any gateway may take them at once)
        and abort them, and wait up to `timeout` seconds for the thread. Idempotent; a wait
        for calls is cut short."""
        self._stop.set()
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to wake
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def kill(self) -> None:
        """Stop as a crash would: nothing more is recorded or renewed (for tests)."""
        self._killed = True
        self.stop()

    async def serve(self, *, until_idle: bool = False, at_most: int | None = None) -> None:
        """Take, renew and make calls until `stop` (or, `until_idle`, until no call is due
        nor in flight, or `at_most` calls were taken and made). Must not raise: a failed
        round trip is logged and tried again."""
        self._room = at_most
        self._beat_at = None if until_idle else 0.0  # a drain's short-lived gateway is no one
        self._stopping, self._freed = asyncio.Event(), asyncio.Event()
        self._loop = asyncio.get_running_loop()  # after the events: `stop` reads it first
        board = self._board()
        try:
            while not self._stop.is_set():
                await self._guarded(self._beat(board))
                await self._guarded(self._tick(board))
                if not self._inflight and self._room == 0:
                    return
                if not until_idle:
                    await self._guarded(self._wait(board))
                elif self._inflight:
                    await asyncio.sleep(self.poll_s)
                elif await self._nothing_due(board):
                    return
        finally:
            await self._wind_down(board)

    def serve_due(self, at_most: int | None = None) -> int:
        """Make the calls due now (`at_most` of them) and wait for them (a
        `Runtime.call_servers` entry, for `harness.runtime.testing.drain`): how many calls
        were made."""
        before = self.made
        asyncio.run(self.serve(until_idle=True, at_most=at_most))
        return self.made - before

    @classmethod
    def drained(cls, runtime: Runtime, settings: Callable[[], Settings]) -> Callable[[], int]:
        """A `Runtime.call_servers` entry for an in-process fleet drained in one thread
        (`harness.runtime.testing.drain`: the evals' runner, tests): when a model call is due,
        a gateway with the settings `settings()` gives at that moment makes the first one
        offered, then the runs it resumes go on. One run's calls are made in the order they
        would be inline; concurrent runs' calls may interleave differently (a run's next
        think waits behind a call another run offered meanwhile; inline it is made at once).
        Returns how many calls it made."""

        def serve() -> int:
            if not runtime.calls.due(MODEL_SERVICE, runtime.now_ms()):
                return 0
            return cls(runtime, settings(), concurrency=1).serve_due(at_most=1)

        return serve

    def _board(self) -> GatewayBoard:
        factory = self.runtime.aredis_factory
        if factory is None:
            return BlockingBoard(self.runtime.calls, self.poll_s)
        return AsyncCallBoard(factory(), self.runtime.keys)

    async def _guarded(self, work: Awaitable[None]) -> None:
        try:
            await work
        except Exception as exc:  # Redis away: the calls wait there, or for another gateway
            self.failed += 1
            _log_failure(exc, "the model gateway's round trip failed; trying again in a second")
            await self._unless_stopped(asyncio.sleep(1.0))

    async def _nothing_due(self, board: GatewayBoard) -> bool:
        """`serve(until_idle=True)` with nothing in flight: True when no call is due. False
        when Redis did not answer (logged, after a pause: `serve` goes round again)."""
        due: list[int] = []

        async def count() -> None:
            due.append(await board.due(MODEL_SERVICE, self.runtime.now_ms()))

        await self._guarded(count())
        return due == [0]

    async def _beat(self, board: GatewayBoard) -> None:
        """Say this gateway is alive, every `GATEWAY_BEAT_S` (`CallBoard.beat`): calls that
        wait while none beats are reported (`harness.runtime.call_health`)."""
        if self._beat_at is None or time.monotonic() < self._beat_at:
            return
        self._beat_at = time.monotonic() + GATEWAY_BEAT_S
        await board.beat(MODEL_SERVICE, self.owner, self.runtime.now_ms())

    async def _wind_down(self, board: GatewayBoard) -> None:
        if not self._killed and self._beat_at is not None:
            await board.leave(MODEL_SERVICE, self.owner)
        if not self._killed and self._inflight:  # hand the calls back: due at once
            held = [(call_id, f.token) for call_id, f in self._inflight.items()]
            with contextlib.suppress(Exception):
                await board.keep(MODEL_SERVICE, self.runtime.now_ms(), 0, held)
        for held_call in list(self._inflight.values()):
            held_call.task.cancel()
        await asyncio.gather(*(h.task for h in self._inflight.values()), return_exceptions=True)
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:  # their async clients belong to this loop
            with contextlib.suppress(Exception):
                await provider.aclose()
            if isinstance(provider, ModelProvider):  # and a blocking client, if one was built
                with contextlib.suppress(Exception):
                    provider.close()
        with contextlib.suppress(Exception):
            await board.aclose()
        self._loop = None

    def _free(self) -> int:
        free = self.concurrency - len(self._inflight)
        return free if self._room is None else min(free, self._room)

    async def _tick(self, board: GatewayBoard) -> None:
        self._texts.pass_on()  # what the calls streamed since the last tick
        if self._inflight and await self._renewal_due(board):
            held = [(call_id, flight.token) for call_id, flight in self._inflight.items()]
            codes = await board.keep(MODEL_SERVICE, self.runtime.now_ms(), self.lease_ms, held)
            for (call_id, _), code in zip(held, codes, strict=True):
                flight = self._inflight.get(call_id)  # it may have ended during the round trip
                if code != KEEP and flight is not None:  # cancelled, or another gateway's now
                    flight.task.cancel()
        now = self.runtime.now_ms()
        for taken in await board.take(MODEL_SERVICE, self.owner, now, self.lease_ms, self._free()):
            mine = self._inflight.get(taken.call_id)
            if mine is not None and not mine.task.done() and not mine.task.cancelling():
                # our own call, whose lease ran out while this loop was held up (renewed just
                # before a long stall, taken again after): its stream goes on under the new
                # lease, rather than the model being asked twice and one answer dropped
                mine.token = taken.token
                continue
            if self._room is not None:
                self._room -= 1
            task = asyncio.create_task(self._make(taken, board))
            self._inflight[taken.call_id] = _InFlight(taken.token, task)
            self.peak = max(self.peak, len(self._inflight))
            task.add_done_callback(functools.partial(self._forget, taken.call_id))

    async def _renewal_due(self, board: GatewayBoard) -> bool:
        """Whether to renew the calls in flight now: a third of a lease since the last
        renewal, or a run stopped waiting on a call since (it may be one of ours). Moves the
        next renewal on when it says so."""
        stops = await board.stops()
        now = time.monotonic()
        if now < self._renew_at and stops == self._stops_seen:
            return False
        self._renew_at, self._stops_seen = now + self.renew_s, stops
        return True

    async def _wait(self, board: GatewayBoard) -> None:
        """Until the next tick: a wake token (with room for a call), a call ending (with
        none), the renewal of the calls in flight, `idle_s` with none, or `stop`."""
        timeout = self.idle_s
        if self._inflight:
            timeout = min(self._renew_at - time.monotonic(), self.poll_s)
            if timeout <= 0:  # the renewal is due: tick now
                return
        assert self._freed is not None
        self._freed.clear()
        if self._free() > 0:
            # bounded here too: a connection that died silently must not hold the loop
            await self._unless_stopped(board.wait(MODEL_SERVICE, timeout), timeout + 10.0)
        else:
            await self._unless_stopped(self._freed.wait(), timeout)

    async def _unless_stopped(self, work: Awaitable[object], within_s: float | None = None) -> None:
        """Await `work` (at most `within_s` seconds) unless `stop` comes first; raises what
        `work` raises."""
        assert self._stopping is not None
        task = asyncio.ensure_future(work)
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait(
                (task, stopping), timeout=within_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            task.cancel()
            stopping.cancel()
            await asyncio.gather(task, stopping, return_exceptions=True)
        if not task.cancelled() and (failed := task.exception()) is not None:
            raise failed

    def _forget(self, call_id: str, task: asyncio.Task[None]) -> None:
        held = self._inflight.get(call_id)
        if held is not None and held.task is task:  # not a later take's flight of the call
            del self._inflight[call_id]
        if self._freed is not None:
            self._freed.set()

    async def _make(self, taken: TakenCall, board: GatewayBoard) -> None:
        """Make one call and record its outcome (not when aborted or killed)."""
        self.made += 1
        result: AssistantTurn | BaseException
        try:
            result = await self._complete(taken.request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure is the call's outcome: the run decides
            result = exc
        if self._killed:
            return
        template = self.runtime.kicker.script_template()
        outcome = outcome_of(result)
        mine = self._inflight.get(taken.call_id)  # its token is the latest lease's
        token = mine.token if mine is not None else taken.token
        try:
            ok, kicks = await board.settle(
                taken.call_id, token, outcome, self.runtime.now_ms(), template
            )
        except Exception as exc:  # the lease runs out and the call is made again: at most once more
            _log_failure(exc, f"the outcome of model call {taken.call_id} could not be recorded")
            return
        if not ok:
            log.info("model call %s was answered elsewhere; this answer is dropped", taken.call_id)
        kick_all(self.runtime.kicker, kicks)

    async def _complete(self, recorded: str) -> AssistantTurn:
        """Make the call the run recorded (`recorded`, a `ModelCallRequest`'s JSON): its
        `wire` sent as is when it has one, else rendered from the request."""
        head = CallHead.model_validate_json(recorded)
        provider = self._provider(head)
        async with self._texts.streaming(head.run_id, head.draft) as on_text:
            if head.wire is not None and isinstance(provider, PreparedModelProvider):
                return await provider.send_async(head.wire, on_text=on_text)
            request = ModelCallRequest.model_validate_json(recorded)
            return await provider.complete_async(
                system=request.system,
                messages=request.messages,
                tools=request.tools,
                max_tokens=request.max_tokens,
                on_text=on_text,
                tool_choice=request.tool_choice,
            )

    def _provider(self, request: CallHead) -> AsyncModelProvider:
        key = (request.provider, request.model, request.temperature)
        found = self._providers.get(key)
        if found is None:
            built = build_named(self.settings, request.provider, request.model, request.temperature)
            if not isinstance(built, AsyncModelProvider):
                raise TypeError(f"the {request.provider} provider cannot be called from a loop")
            found = self._providers[key] = built
        return found


def _log_failure(exc: Exception, what: str) -> None:
    """Log a failed round trip: Redis away (`BusUnavailableError`, the operator's known
    condition) as one warning with its reason; anything else, a fault of ours, as an error
    with its traceback."""
    if isinstance(exc, BusUnavailableError):
        log.warning("%s (%s)", what, exc)
    else:
        log.error("%s", what, exc_info=exc)
