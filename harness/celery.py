"""The fleet as a normal Celery app, for Celery's own command line and process managers:

    celery -A harness.celery worker          # what `harness worker` runs
    celery -A harness.celery inspect ping

Importing this module is cheap (settings, the broker's URL; no connection): a worker builds
the fleet's runtime, plugs the channels in, loads the functions and registers them when it
starts (Celery's `worker_init`, see `harness.composition.celery_app`). Inside the package,
`import celery` still names Celery itself: imports are absolute.
"""

from __future__ import annotations

from harness.composition import celery_app

app = celery_app()
"""The Celery app `celery -A harness.celery` finds (`harness.runtime.celery_app.app`)."""
