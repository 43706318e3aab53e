"""Replaying a finished run from its journal, in this process, with nothing run for real.

`replay(runtime, fn, record, journal)` calls the run's handler on a `ReplayState`: an
in-memory copy of the journal that answers every step the handler asks for and refuses
everything else. A step the journal does not have, one recorded as another kind, one whose
recorded attempt did not end (a retry that never finished), or one asked for after a step
that the journal says began after it had ended, ends the replay as `Diverged`, naming the
step: that is the handler no longer doing what it did. Nothing is written: no journal entry,
no lease, no event, no model or tool call (every one of them sits inside a step).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from harness.errors import NonDeterminismError
from harness.redaction import redact
from harness.runtime.functions import Function
from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord
from harness.runtime.run_state import Interrupt, RunState
from harness.runtime.steps import Context

log = logging.getLogger("harness.replay")
REPLAY_EPOCH = "replay"
"""The epoch a replay claims to hold; nothing it does is fenced, because nothing is written."""


class Diverged(Interrupt):
    """The handler asked for something the journal cannot answer. An `Interrupt`, so a
    handler's `except Exception` does not swallow it."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"step {step!r}: {reason}")
        self.step = step
        self.reason = reason


@dataclass
class ReplayState(RunState):
    """A `RunState` over a scratch copy of a journal that only reads it. `asked` is the
    order the handler asked for its steps."""

    asked: list[str] = field(default_factory=list)

    def recorded(self, key: str, kind: str) -> dict[str, Any] | None:
        """The step's entry; raises `Diverged` when the journal cannot answer it as it was."""
        try:
            rec = super().recorded(key, kind)
        except NonDeterminismError as exc:
            raise Diverged(key, str(exc)) from exc
        if rec is None:
            raise Diverged(key, f"the journal has no {kind} step {key!r}; it would run for real")
        if kind == "run" and "v" not in rec and not rec.get("final"):
            raise Diverged(key, "its recorded attempt failed and was to be retried")
        self._check_order(key, rec)
        self.asked.append(key)
        return rec

    def _check_order(self, key: str, rec: dict[str, Any]) -> None:
        """A step asked for after one that, in the journal, began later than it (strictly)
        and no earlier than it ended ran in another order. Steps that overlapped (`run_all`)
        or began in the same millisecond are not told apart, so this never accuses code that
        did not change."""
        began, ended = rec.get("s"), rec.get("t")
        if not isinstance(began, int | float) or not isinstance(ended, int | float):
            return
        for earlier in self.asked:
            other = self.journal[earlier].get("s")
            if isinstance(other, int | float) and began < other and ended <= other:
                raise Diverged(
                    key, f"asked for after {earlier!r}, but it ran before {earlier!r} began"
                )

    def commit(self, key: str, *_: Any, **__: Any) -> None:
        """Never reached for a step the journal answers; refuses to write anything (whatever
        the record and counters: `RunState.commit`)."""
        raise Diverged(key, "the replay would record it anew")

    def suspend(self, key: str, kind: str, wake_at_ms: int | None, **kw: Any) -> int:
        """Refuses: a replayed run never parks."""
        raise Diverged(key, f"the replay would {kind} here")

    def resolved_record(self, key: str) -> dict[str, Any]:
        """Refuses: every wait the run ended is already in the journal."""
        raise Diverged(key, "the wait was not resolved in the journal")


@dataclass(frozen=True)
class Replay:
    """What a replay ended with: `status` "completed" with `result`, "failed" with `error`
    (as the executor words a failure), or "diverged" with `diverged` (the step and why).
    `asked` is the steps answered from the journal, in order; `unused` the journal's steps
    the handler never asked for."""

    status: str
    result: Any = None
    error: str = ""
    diverged: Diverged | None = None
    asked: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()


def replay(
    runtime: Runtime, fn: Function, record: RunRecord, journal: dict[str, dict[str, Any]]
) -> Replay:
    """Run `fn` on `record`'s event against `journal` (not changed: the replay works on a
    copy). Must not raise for anything the handler does."""
    state = ReplayState(
        runtime=runtime,
        spec=fn.spec,
        run_id=record.id,
        epoch=REPLAY_EPOCH,
        event=record.event,
        journal=json.loads(json.dumps(journal)),
    )
    status, result, error, diverged = "completed", None, "", None
    try:
        result = json.loads(json.dumps(fn(Context(state, log)), allow_nan=False))
    except Diverged as exc:
        status, diverged = "diverged", exc
    except Interrupt as exc:  # a cancel noticed by the handler itself
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        status, error = "failed", redact(f"{type(exc).__name__}: {exc}")[:2000]
    unused = tuple(key for key in journal if key not in state.asked)
    return Replay(status, result, error, diverged, tuple(state.asked), unused)
