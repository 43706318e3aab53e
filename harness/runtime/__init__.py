"""The durable event runtime: events on a Redis bus, functions as Celery tasks, durable steps.

Public API:

    from harness.runtime import function, event, cron, Singleton, Concurrency, publish

    @function(id="greet", trigger=event("app/user.created"), retries=3)
    def greet(ctx):
        profile = ctx.step.run("load", load_profile, ctx.event.data["user_id"])
        ctx.step.sleep("pause", "1h")
        ctx.step.send_event("notify", {"name": "app/greeted", "data": profile})
"""

from harness.errors import NonRetriableError, StepFailedError
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
