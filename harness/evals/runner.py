"""Running suites: which Redis the cases run on, and how many cases at once.

Cases run on `REDIS_URL` when it is set (under their own key prefixes, beside any fleet
there), else on a temporary embedded Redis that lives for the run. With `parallel` > 1,
cases run in that many spawned processes, since the agent's dependencies are process-wide.
"""

from __future__ import annotations

import multiprocessing
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from harness.evals.case_run import run_case
from harness.evals.results import Attempt
from harness.evals.suite import Case, Suite
from harness.fleet.embedded_redis import EmbeddedRedis
from harness.settings import Settings

Progress = Callable[[Attempt], None]
"""Told of each attempt as it ends (the command prints a dot or an F)."""


@contextmanager
def eval_redis(settings: Settings) -> Iterator[str]:
    """The URL of the Redis to run cases on: `REDIS_URL`, else a temporary embedded Redis
    stopped on exit. Raises `ConfigurationError` when neither is available."""
    if settings.redis_url:
        yield settings.redis_url
        return
    with tempfile.TemporaryDirectory(prefix="harness-eval-redis-") as folder:
        with EmbeddedRedis(Path(folder), persist=False) as server:
            yield server.url


def run_suites(
    suites: list[Suite],
    settings: Settings,
    redis_url: str,
    *,
    repeat: int = 1,
    parallel: int = 1,
    progress: Progress | None = None,
) -> list[Attempt]:
    """Every case of `suites`, `repeat` times each, in suite and case order."""
    jobs: list[tuple[Case, str, int]] = [
        (case, suite.name, n) for suite in suites for case in suite.cases for n in range(repeat)
    ]
    if parallel <= 1:
        attempts = []
        for case, suite_name, n in jobs:
            attempts.append(run_case(case, suite_name, settings, redis_url, n))
            if progress is not None:
                progress(attempts[-1])
        return attempts
    context = multiprocessing.get_context("spawn")  # no fork of a process holding threads
    with ProcessPoolExecutor(max_workers=parallel, mp_context=context) as pool:
        futures = [pool.submit(run_case, c, s, settings, redis_url, n) for c, s, n in jobs]
        results = []
        for future in futures:
            results.append(future.result())
            if progress is not None:
                progress(results[-1])
        return results
