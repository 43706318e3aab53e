"""How this process's Celery workers start: `start_celery_worker`, what `celery worker` runs,
without Celery's command line.

Celery's command line (`app.worker_main`) imports every `celery` subcommand, the `amqp` one's
REPL with them (click-repl, prompt_toolkit, pygments: about 13 MB held for the life of each
worker and sidecar executor, for a prompt none of them shows); `app.Worker(...).start()` is
the same worker with the options given as keywords.

Celery's start-up banner (its version, config, queues and task list: about 30 lines) is
printed unless the worker is quiet. `harness up` hides it in every worker it starts, the
sidecar's too, by setting `QUIET_ENV=1` in their environment (`harness up --verbose` does
not); the worker's logs are unchanged.

    start_celery_worker(app, concurrency=4, queues=["harness"], loglevel="INFO")
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery

QUIET_ENV = "HARNESS_QUIET_START"


def quiet_start() -> bool:
    """Whether this process's workers start without Celery's banner (`QUIET_ENV=1`)."""
    return os.environ.get(QUIET_ENV, "").strip() == "1"


def start_celery_worker(app: Celery, **options: Any) -> None:
    """Run a Celery worker of `app` in this thread until it stops, as `celery worker` with
    `options` (the command line's, as keywords: `concurrency`, `queues` as a list,
    `loglevel`, `hostname` (`%h` expanded), `without_gossip`, ...), quiet when
    `quiet_start()`. What a handler of Celery's `worker_init` raises (a `SystemExit`) leaves
    here, as it leaves `app.worker_main`."""
    app.Worker(quiet=quiet_start(), **options).start()
