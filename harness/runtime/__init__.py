"""The durable event runtime: events on a Redis bus, functions as Celery tasks, durable steps.

Public API:

    from harness.runtime import function, event, cron, Singleton, Concurrency, publish

    @function(id="greet", trigger=event("app/user.created"), retries=3)
    def greet(ctx):
        profile = ctx.step.run("load", load_profile, ctx.event.data["user_id"])
        ctx.step.sleep("pause", "1h")
        ctx.step.send_event("notify", {"name": "app/greeted", "data": profile})

The names are loaded on first use (PEP 562 `__getattr__`): importing one submodule
(`harness.runtime.settings`, `harness.runtime.ledger`) does not import the Celery app and the
Redis clients with it, so a CLI command that needs neither starts fast (docs/benchmarks.md
"Start-up").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import NonRetriableError, StepFailedError
from harness.lazy_names import lazy_names

if TYPE_CHECKING:
    from harness.runtime.assembly import get_runtime, set_runtime
    from harness.runtime.bus import PublishResult, publish, run_id_for
    from harness.runtime.functions import (
        Concurrency,
        CronTrigger,
        EventTrigger,
        Function,
        FunctionSpec,
        Singleton,
        cron,
        event,
        function,
    )
    from harness.runtime.instance import Runtime
    from harness.runtime.steps import Context, Step


__all__ = [
    "Concurrency",
    "Context",
    "CronTrigger",
    "EventTrigger",
    "Function",
    "FunctionSpec",
    "NonRetriableError",
    "PublishResult",
    "Runtime",
    "Singleton",
    "Step",
    "StepFailedError",
    "cron",
    "event",
    "function",
    "get_runtime",
    "publish",
    "run_id_for",
    "set_runtime",
]


__getattr__ = lazy_names(
    __name__,
    {
        "get_runtime": "assembly",
        "set_runtime": "assembly",
        "PublishResult": "bus",
        "publish": "bus",
        "run_id_for": "bus",
        "Concurrency": "functions",
        "CronTrigger": "functions",
        "EventTrigger": "functions",
        "Function": "functions",
        "FunctionSpec": "functions",
        "Singleton": "functions",
        "cron": "functions",
        "event": "functions",
        "function": "functions",
        "Runtime": "instance",
        "Context": "steps",
        "Step": "steps",
    },
)
