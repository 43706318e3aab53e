"""A run's waterfall: each step as a bar from when it started to when it ended, on one time
axis from the run's start, drawn by the run page as plain HTML (no script, no library).

A step that was tried more than once is marked with its tries; a sleep, an event wait and a
wait for an invoked run are gaps (the run held no worker), labelled with their kind; a step
that started a run links to it. The step the run is suspended in right now runs to `now`.
Steps recorded before steps had times are left out (there is nothing to place them by).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.observe.child_runs import ChildRun
from harness.observe.run_views import RunView, StepView

WAITS = frozenset({"sleep", "wait", "invoke", "retry"})
"""Step kinds during which the run waits rather than works."""
MIN_WIDTH_PCT = 0.4
"""The narrowest bar drawn, so an instant step still shows."""


@dataclass(frozen=True)
class Bar:
    """One step on the axis: `left_pct` and `width_pct` are percentages of the run's span;
    `offset_ms` is when it started after the run did; `duration_ms` None while it runs."""

    key: str
    kind: str
    status: str
    attempts: int
    offset_ms: int
    duration_ms: int | None
    left_pct: float
    width_pct: float
    child: str = ""

    @property
    def gap(self) -> bool:
        """True for a wait (sleep, event, invoked run): time the run spent parked."""
        return self.kind in WAITS

    @property
    def retried(self) -> bool:
        """True when the step took more than one try."""
        return self.attempts > 1


@dataclass(frozen=True)
class Timeline:
    """A run's bars in start order, over `span_ms` milliseconds from its start."""

    bars: tuple[Bar, ...]
    span_ms: int


def timeline(
    run: RunView, steps: Sequence[StepView], children: Sequence[ChildRun], now_ms: int
) -> Timeline:
    """The waterfall of `run`'s `steps` (see the module docstring); `now_ms` ends the bars
    of a run still going. Pure; never raises."""
    timed = [step for step in steps if step.started_ms]
    origin = run.started_ms or run.created_ms
    origin = min([origin, *(step.started_ms for step in timed)]) if origin else 0
    if not origin:
        return Timeline((), 0)
    ends = [run.ended_ms or now_ms, *(step.ended_ms for step in timed)]
    span = max(1, max(ends) - origin)
    started_by = {child.step: child.id for child in children if child.step}
    bars = []
    for step in sorted(timed, key=lambda step: (step.started_ms, step.ended_ms or now_ms)):
        end = step.ended_ms or now_ms
        left = 100.0 * (step.started_ms - origin) / span
        width = max(MIN_WIDTH_PCT, 100.0 * (end - step.started_ms) / span)
        bars.append(
            Bar(
                key=step.key,
                kind=step.kind,
                status=step.status,
                attempts=step.attempts,
                offset_ms=step.started_ms - origin,
                duration_ms=step.duration_ms,
                left_pct=round(min(left, 100.0 - MIN_WIDTH_PCT), 2),
                width_pct=round(min(width, 100.0 - left), 2) if left < 100 else MIN_WIDTH_PCT,
                child=started_by.get(step.key, ""),
            )
        )
    return Timeline(tuple(bars), span)
