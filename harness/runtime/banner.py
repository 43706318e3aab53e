"""Celery's start-up banner (its version, config, queues and task list: about 30 lines) is
printed unless the worker starts with `-q`. `harness up` hides it in every worker it starts,
the sidecar's too, by setting `QUIET_ENV=1` in their environment (`harness up --verbose`
does not); the worker's logs are unchanged.

    app.worker_main(celery_argv(["worker", "--concurrency=4"]))
"""

from __future__ import annotations

import os

QUIET_ENV = "HARNESS_QUIET_START"


def celery_argv(worker_args: list[str]) -> list[str]:
    """Celery's command line for `worker_args`, with Celery's global `-q` first when this
    process's environment has `QUIET_ENV=1`."""
    quiet = os.environ.get(QUIET_ENV, "").strip() == "1"
    return ["-q", *worker_args] if quiet else list(worker_args)
