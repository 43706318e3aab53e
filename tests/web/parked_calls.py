"""A run parked on a model call that no gateway makes: what the health page and `/metrics`
report as waiting."""

from __future__ import annotations

from typing import Any

from harness.agent.model_calls import MODEL_SERVICE
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain


def park_a_model_call(runtime: Runtime, registry: FunctionRegistry) -> str:
    """Publish an event whose run parks on a model call; returns the run's id."""

    @function(id="thinker", trigger=event("app/think"), registry=registry)
    def thinker(ctx: Context) -> Any:
        return ctx.step.run("think", lambda: ctx.step.offload(MODEL_SERVICE, "{}"))

    runtime.register_functions()
    run_id = publish({"name": "app/think"}, runtime=runtime).run_ids[0]
    drain(runtime)
    return run_id
