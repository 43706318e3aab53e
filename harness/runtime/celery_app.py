"""The Celery seam: the app, the one task (`harness.kick`) and the kicker that sends it.

Celery only carries kicks. Acks stay early on purpose: the run ledger, not the broker,
decides who runs what, and the scheduler re-kicks whatever a dead worker dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import Celery

from harness.errors import ConfigurationError
from harness.runtime.executor import advance
from harness.runtime.instance import Runtime

log = logging.getLogger(__name__)

app = Celery("harness")
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=False,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    task_default_queue="harness",
)


_runtime_provider: Callable[[], Runtime] | None = None


def configure(broker_url: str, runtime_provider: Callable[[], Runtime] | None = None) -> Celery:
    """Point the app at a broker. Call before sending or consuming.

    A consuming process also passes `runtime_provider`, the runtime its kick task advances
    runs in (`harness.runtime.assembly` passes `get_runtime`); senders need none.
    """
    global _runtime_provider
    app.conf.broker_url = broker_url
    if runtime_provider is not None:
        _runtime_provider = runtime_provider
    return app


@app.task(name="harness.kick", ignore_result=True)  # type: ignore[untyped-decorator]
def kick(run_id: str) -> str:
    """Advance one run in this worker. Duplicates and stale kicks are no-ops.

    Raises `ConfigurationError` when `configure` was given no runtime provider."""
    if _runtime_provider is None:
        raise ConfigurationError("the kick task has no runtime: call configure(url, provider)")
    return advance(_runtime_provider(), run_id)


class CeleryKicker:
    """Sends kicks as Celery messages to the run's queue."""

    def kick(self, run_id: str, queue: str) -> None:
        """Publish one kick. Broker errors are logged, not raised: the reaper re-kicks."""
        try:
            app.send_task("harness.kick", args=[run_id], queue=queue)
        except Exception as exc:  # kombu raises several unrelated types on broker trouble
            log.warning("could not send kick for run %s (%s); the reaper will retry", run_id, exc)
