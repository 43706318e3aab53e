"""The worker's pool: Celery's thread pool, waking the consumer's event loop when a task ends.

The worker takes a kick only when a thread is free (`worker_disable_prefetch`): while every
thread is busy, kombu stops reading the queue, and it looks again only when its event loop
wakes up. A thread finishing a task wakes nothing, so the loop slept until its next timer
(up to a second) with kicks waiting and threads idle: under load, the worker took 18 kicks a
second with 8 threads and 3 with 2. Waking the loop when each task ends (after Celery has
released the task's slot) makes a free thread take the next kick at once.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from celery.concurrency.thread import ApplyResult
from celery.concurrency.thread import TaskPool as ThreadTaskPool
from kombu.asynchronous import get_event_loop

POOL = "harness.runtime.worker_pool:TaskPool"
"""This pool's name for Celery's `worker_pool` setting (`celery_app` sets it)."""


class TaskPool(ThreadTaskPool):  # type: ignore[misc]  # celery ships no type hints
    """Celery's thread pool, waking the consumer's event loop each time a task ends."""

    def on_apply(self, *args: Any, **kwargs: Any) -> ApplyResult:
        """Run the task on a thread, as Celery's pool does; when it has ended (its result
        and its slot handed back to Celery), wake the consumer to read the next kick."""
        result: ApplyResult = super().on_apply(*args, **kwargs)
        result.f.add_done_callback(_wake_consumer)
        return result


def _wake_consumer(_: Future[Any]) -> None:
    hub = get_event_loop()
    if hub is not None:
        hub.call_soon(_tick)  # type: ignore[no-untyped-call]


def _tick() -> None:
    """Nothing: being called is what makes the event loop run a tick (and re-arm its read)."""
