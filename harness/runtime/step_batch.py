"""Running the work of several independent steps at once, with one writer of the journal.

`Step.run_all` reserves its steps' keys in order, then hands the work to `run_concurrently`:
each job runs in a thread of a small pool, and what it returned (or raised) comes back to
the caller's thread, as each job finishes. The caller records it there, so journal writes
(`RunState.commit`, `RunState.suspend`) never run on two threads: `RunState` needs no lock,
and a crash mid-batch leaves every step recorded whose job had finished.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ran:
    """What one job did: when it started (ms, by the runtime's clock), and its `value`, or
    the `error` it raised (an `Exception`; an interrupt is re-raised, never returned)."""

    started_ms: int
    value: Any = None
    error: Exception | None = None


def run_concurrently(
    jobs: Sequence[Callable[[], Any]],
    *,
    workers: int,
    now_ms: Callable[[], int],
    done: Callable[[int, Ran], None],
) -> None:
    """Run `jobs` at most `workers` at a time; call `done(index, ran)` on this thread as
    each finishes, in the order they finish. Each job runs in a copy of this thread's
    context variables. When `done` or a job raises a `BaseException` that is not an
    `Exception` (an interrupt: the run was suspended, cancelled, lost its lease, or the
    worker is being killed), the first one is raised here once the jobs still running have
    ended (jobs not started are dropped); when this thread itself is interrupted, at once,
    without waiting for them."""
    size = max(1, min(workers, len(jobs)))
    pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="step")
    futures: dict[Future[Ran], int] = {}
    try:
        for index, job in enumerate(jobs):
            context = contextvars.copy_context()
            futures[pool.submit(context.run, _timed, job, now_ms)] = index
        pending = set(futures)
        interrupt: BaseException | None = None
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=futures.__getitem__):
                if interrupt is not None:
                    continue  # nothing more is recorded once the batch is interrupted
                try:
                    done(futures[future], future.result())
                except BaseException as exc:  # an interrupt: stop recording, end the batch
                    interrupt = exc
                    for rest in pending:
                        rest.cancel()
        if interrupt is not None:
            raise interrupt
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _timed(job: Callable[[], Any], now_ms: Callable[[], int]) -> Ran:
    started = now_ms()
    try:
        return Ran(started, value=job())
    except Exception as exc:
        return Ran(started, error=exc)
