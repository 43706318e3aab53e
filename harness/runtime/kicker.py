"""Kicks: the messages that tell a worker "try to advance run X".

A kick carries a run id and its sequence number in its queue; Redis holds the truth. Each run
has at most one kick outstanding: the ledger tracks it from sending until a worker takes it,
and the scheduler re-sends only a kick that is lost (its queue delivered later kicks, or holds
none), never one that is merely waiting for a busy worker. Delivering a kick twice never
matters: a claim refuses a run that is already leased.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol

from harness.lazy_value import Lazy

KICK_TASK = "harness.kick"


class Kick(NamedTuple):
    """One kick: advance `run_id`, sent to `queue` as number `seq` of that queue (0: untracked).
    A `front` kick goes to the front of its queue, ahead of kicks already waiting (a run
    recovered from a dead worker must not wait behind the backlog of new work)."""

    run_id: str
    queue: str
    seq: int = 0
    front: bool = False


class KickHold(NamedTuple):
    """Where a publish or a run's end hands the kicks of the runs on `queue` instead of
    sending them: `take` gets them (`RunState.hold_kicks`). Kicks on other queues are sent
    as usual (by the script itself when the kicker has a `script_template`)."""

    queue: str
    take: Callable[[Iterable[Kick]], None]


class Kicker(Protocol):
    """Sends kicks. Implementations must not raise for a run they cannot kick right now:
    the scheduler will kick it again."""

    def kick(self, kick: Kick) -> None:
        """Ask some worker on `kick.queue` to advance the run; a `front` kick is taken
        before the kicks already waiting in the queue."""

    async def kick_async(self, kick: Kick) -> None:
        """`kick` for an event loop: must not block it."""

    def backlog(self, queue: str) -> int | None:
        """How many kicks wait in `queue` for a worker, or None when that cannot be told (the
        scheduler then treats the queue as holding none). Must not raise."""

    def script_template(self) -> str:
        """The broker message of a kick, for the runtime's Lua scripts to push onto the
        queue's list themselves (the broker being the runtime's Redis): a JSON list of its
        literal text and, between, the names of the blanks to fill in (`ID`, a message id;
        `RUN`; `SEQ`; `QUEUE`, JSON-escaped), so a script only joins strings; "" when kicks
        must go through `kick`. Must not raise."""


class RecordingKicker:
    """Keeps kicks in memory, to run a runtime without Celery (see `harness.runtime.testing`)."""

    def __init__(self) -> None:
        self.pending: deque[Kick] = deque()

    def kick(self, kick: Kick) -> None:
        """Remember the kick; `pending` holds them in the order a worker takes them."""
        if kick.front:
            self.pending.appendleft(kick)
        else:
            self.pending.append(kick)

    async def kick_async(self, kick: Kick) -> None:
        """`kick`, from an event loop."""
        self.kick(kick)

    def backlog(self, queue: str) -> int:
        """The pending kicks for `queue`."""
        return sum(1 for k in self.pending if k.queue == queue)

    def script_template(self) -> str:
        """ "": every kick comes through `kick`, to be remembered."""
        return ""


class DeferredKicker:
    """A kicker built by `build` on its first use, then used for every kick: a runtime that
    only reads (most `harness` commands) never builds its Celery kicker, nor imports Celery
    (`harness.runtime.assembly`). Thread-safe: `build` is called at most once (again only if
    it raised). Kicks, templates and backlogs are the built kicker's, unchanged."""

    def __init__(self, build: Callable[[], Kicker]) -> None:
        self._kicker = Lazy(build)

    def resolve(self) -> Kicker:
        """The kicker, built now if it was not yet. Raises what `build` raises."""
        return self._kicker.get()

    @property
    def built(self) -> bool:
        """Whether a kick, template or backlog has built the kicker."""
        return self._kicker.built() is not None

    def kick(self, kick: Kick) -> None:
        """The built kicker's `kick`."""
        self.resolve().kick(kick)

    async def kick_async(self, kick: Kick) -> None:
        """The built kicker's `kick_async`."""
        await self.resolve().kick_async(kick)

    def backlog(self, queue: str) -> int | None:
        """The built kicker's `backlog`."""
        return self.resolve().backlog(queue)

    def script_template(self) -> str:
        """The built kicker's `script_template`."""
        return self.resolve().script_template()

    async def aclose(self) -> None:
        """Close the built kicker's clients, if it was built and has any. Idempotent."""
        closer = getattr(self._kicker.built(), "aclose", None)
        if closer is not None:
            await closer()


def build_deferred(kicker: Kicker) -> Kicker:
    """`kicker`, built now when it is a `DeferredKicker`: what a process that consumes kicks
    calls before its consumer connects, since building the runtime's Celery kicker is what
    points Celery at the runtime's broker (`harness.runtime.assembly`)."""
    return kicker.resolve() if isinstance(kicker, DeferredKicker) else kicker


def kick_all(kicker: Kicker, kicks: Iterable[Kick]) -> None:
    """Send each kick."""
    for kick in kicks:
        kicker.kick(kick)


async def kick_all_async(kicker: Kicker, kicks: Iterable[Kick]) -> None:
    """Send each kick without blocking the event loop."""
    for kick in kicks:
        await kicker.kick_async(kick)
