"""The model gateway: makes offloaded model calls (`MODEL_CALLS=gateway`) on one event loop.

A run's think step parks on its model call (`harness.agent.model_calls`) and frees its worker
thread. A gateway, an asyncio loop on a thread of each worker process (`start`), takes due
calls from Redis under a lease (`harness.runtime.calls`), at most `concurrency` at once (the
rest wait in Redis: a call queues, never fails, for want of a slot), makes each on the
SDK's async client, streams its text to the run's draft as a worker would, and records the
outcome once, which resumes the run on any worker.

Every tick (`poll_s`) one round trip renews the leases of the calls in flight and says which
runs stopped waiting (cancelled, ended): those streams are aborted at once, as a worker's
cancel watcher aborts an inline call. A steering message does not abort a call, inline or
here: it is taken before the next think. A gateway that dies stops renewing; after its lease
another gateway makes the call again, and the dead one's answer, should it come, is refused.

Redis is spoken to with the runtime's blocking client: single short scripts per tick and
per call, cheap next to a model call (an async Redis client is a possible refinement).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.agent.drafting import open_live
from harness.agent.model_calls import MODEL_SERVICE, ModelCallRequest, outcome_of
from harness.llm.factory import build_named
from harness.llm.provider import AsyncModelProvider
from harness.llm.types import AssistantTurn
from harness.runtime.calls import KEEP, TakenCall
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all
from harness.settings import Settings

log = logging.getLogger(__name__)

POLL_S = 0.05
"""How often a gateway looks for new calls and renews its leases, in seconds."""


@dataclass
class _InFlight:
    token: str
    task: asyncio.Task[None]


@dataclass
class ModelGateway:
    """One process's model gateway (see the module docstring). `concurrency` bounds the
    calls in flight; a lease lasts the runtime's `lease_ttl`. `made` counts the calls made,
    `peak` the most in flight at once."""

    runtime: Runtime
    settings: Settings
    concurrency: int = 256
    poll_s: float = POLL_S
    owner: str = ""
    made: int = 0
    peak: int = 0
    _inflight: dict[str, _InFlight] = field(default_factory=dict)
    _providers: dict[tuple[str, str, float | None], AsyncModelProvider] = field(
        default_factory=dict
    )
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _killed: bool = False
    _room: int | None = None  # calls `serve` may still take (None: no bound)

    def __post_init__(self) -> None:
        self.owner = self.owner or f"gateway:{self.runtime.new_owner()}"

    @property
    def lease_ms(self) -> int:
        """How long a taken call is this gateway's without a renewal."""
        return int(self.runtime.lease_ttl * 1000)

    def start(self) -> None:
        """Serve on a daemon thread of its own until `stop`. Idempotent."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self.serve()), name="model-gateway", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking calls, hand those in flight back (any gateway may take them at once)
        and abort them, and wait up to `timeout` seconds for the thread. Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def kill(self) -> None:
        """Stop as a crash would: nothing more is recorded or renewed (for tests)."""
        self._killed = True
        self.stop()

    async def serve(self, *, until_idle: bool = False, at_most: int | None = None) -> None:
        """Take, renew and make calls until `stop` (or, `until_idle`, until no call is due
        nor in flight, or `at_most` calls were taken and made). Must not raise: a failed
        tick is logged and tried again."""
        self._room = at_most
        try:
            while not self._stop.is_set():
                try:
                    self._tick()
                except Exception:  # Redis away: the calls wait there, or for another gateway
                    log.exception("the model gateway's tick failed; trying again in a second")
                    await asyncio.sleep(1.0)
                if not self._inflight and self._room == 0:
                    return
                if until_idle and not self._inflight:
                    if not self.runtime.calls.due(MODEL_SERVICE, self.runtime.now_ms()):
                        return
                await asyncio.sleep(self.poll_s if self._inflight or not until_idle else 0)
        finally:
            if not self._killed and self._inflight:  # hand the calls back: due at once
                held = [(call_id, f.token) for call_id, f in self._inflight.items()]
                with contextlib.suppress(Exception):
                    self.runtime.calls.keep(MODEL_SERVICE, self.runtime.now_ms(), 0, held)
            for held_call in list(self._inflight.values()):
                held_call.task.cancel()
            await asyncio.gather(*(h.task for h in self._inflight.values()), return_exceptions=True)
            providers, self._providers = list(self._providers.values()), {}
            for provider in providers:  # their async clients belong to this loop
                with contextlib.suppress(Exception):
                    await provider.aclose()

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

    def _tick(self) -> None:
        calls, now = self.runtime.calls, self.runtime.now_ms()
        held = [(call_id, flight.token) for call_id, flight in self._inflight.items()]
        for (call_id, _), code in zip(
            held, calls.keep(MODEL_SERVICE, now, self.lease_ms, held), strict=True
        ):
            if code != KEEP:  # the run was cancelled, or another gateway has the call now
                self._inflight[call_id].task.cancel()
        free = self.concurrency - len(self._inflight)
        if self._room is not None:
            free = min(free, self._room)
        for taken in calls.take(MODEL_SERVICE, self.owner, now, self.lease_ms, free):
            if self._room is not None:
                self._room -= 1
            task = asyncio.create_task(self._make(taken))
            self._inflight[taken.call_id] = _InFlight(taken.token, task)
            self.peak = max(self.peak, len(self._inflight))
            task.add_done_callback(functools.partial(self._forget, taken.call_id))

    def _forget(self, call_id: str, _: asyncio.Task[None]) -> None:
        self._inflight.pop(call_id, None)

    async def _make(self, taken: TakenCall) -> None:
        """Make one call and record its outcome (not when aborted or killed)."""
        self.made += 1
        result: AssistantTurn | BaseException
        try:
            request = ModelCallRequest.model_validate_json(taken.request)
            result = await self._complete(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure is the call's outcome: the run decides
            result = exc
        if self._killed:
            return
        template = self.runtime.kicker.script_template()
        outcome = outcome_of(result)
        try:
            ok, kicks = self.runtime.calls.settle(
                taken.call_id, taken.token, outcome, self.runtime.now_ms(), template
            )
        except Exception:  # the lease runs out and the call is made again: at most once more
            log.exception("the outcome of model call %s could not be recorded", taken.call_id)
            return
        if not ok:
            log.info("model call %s was answered elsewhere; this answer is dropped", taken.call_id)
        kick_all(self.runtime.kicker, kicks)

    async def _complete(self, request: ModelCallRequest) -> AssistantTurn:
        provider = self._provider(request)
        live, draft, on_text = None, None, None
        if (target := request.draft) is not None:
            live, draft = open_live(
                self.runtime, request.run_id, target.reply, target.stream_default
            )
            on_text = live.begin(target.think, target.attempt)
        try:
            return await provider.complete_async(
                system=request.system,
                messages=request.messages,
                tools=request.tools,
                on_text=on_text,
                tool_choice=request.tool_choice,
            )
        finally:
            if live is not None:
                live.end()
            if draft is not None:  # the resumed run opens the same draft and goes on with it
                with contextlib.suppress(Exception):
                    draft.close()

    def _provider(self, request: ModelCallRequest) -> AsyncModelProvider:
        key = (request.provider, request.model, request.temperature)
        found = self._providers.get(key)
        if found is None:
            built = build_named(self.settings, request.provider, request.model, request.temperature)
            if not isinstance(built, AsyncModelProvider):
                raise TypeError(f"the {request.provider} provider cannot be called from a loop")
            found = self._providers[key] = built
        return found
