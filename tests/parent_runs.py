"""A finished parent run with two children, one waited for and one detached, for the tests
of what `harness runs show` and the dashboard show of child runs."""

from __future__ import annotations

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock

CHILDREN_COST_USD = 0.25


def finished_parent(runtime: Runtime, registry: FunctionRegistry, clock: ManualClock) -> str:
    """Run "mother" to its end: it invokes "kid" in step "wait-for", starts another detached
    in step "spawn" a second later (runs created in the same millisecond have no order), and
    reports `children_cost_usd` 0.25. Returns the mother's run id."""

    @function(id="kid", trigger=event("app/never"), registry=registry)
    def kid(ctx: Context) -> str:
        return "ok"

    @function(id="mother", trigger=event("app/go"), registry=registry)
    def mother(ctx: Context) -> dict[str, object]:
        ctx.step.invoke("wait-for", "kid")
        ctx.step.run("a-second", clock.advance, 1.0)
        ctx.step.start("spawn", "kid")
        return {"children_cost_usd": CHILDREN_COST_USD}

    runtime.register_functions()
    run_id = publish({"name": "app/go", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    return run_id
