"""The engine's hook for committed steps: what a product plugs in to learn of each step once
its result is in the run's journal (the product's usage totals, `harness.records.usage`).

An observer is called once per step execution that committed a result, after the commit, on
the worker thread that ran the step. A replay that returns a journaled result calls none, so
what an observer counts is counted once per step, not once per replay. An observer that
raises is logged in one warning line and never fails the step (the step already happened)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommittedStep:
    """A step whose result was just journaled.

    `step_key` is its journal key (`think:0`); `event` the run's triggering event; `usage` the
    model call's tokens as `harness.runtime.previews.usage_of` reads them (`{"model", "in",
    "out", "cr", "cw"}`), None when the step was no model call; `ended_ms` when the step's
    function returned, `started_ms` when this try of it began (0 when unknown), by the
    runtime's clock."""

    run_id: str
    function_id: str
    event: Mapping[str, Any]
    step_key: str
    usage: Mapping[str, Any] | None
    ended_ms: int
    started_ms: int = 0


class StepObserver(Protocol):
    """Told of every step that committed a result. May raise; the engine logs it and goes on."""

    def step_committed(self, step: CommittedStep) -> None:
        """Called after `step`'s result is journaled, once per execution of the step."""
        ...


def notify(observers: Sequence[StepObserver], step: CommittedStep) -> None:
    """Tell each observer of `step`, in order. Never raises: an observer that fails is logged
    in one warning line and the next one is still told."""
    for observer in observers:
        try:
            observer.step_committed(step)
        except Exception as exc:
            log.warning(
                "run %s: step observer %s failed on %s: %s",
                step.run_id, type(observer).__name__, step.step_key, exc,
            )  # fmt: skip
