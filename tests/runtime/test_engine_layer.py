"""The engine (`harness/runtime/`) knows nothing of the product, and runs alone.

The product (the agent, the channels, their records and events) meets the engine only where a
fleet process is put together (`harness/composition.py`): `Runtime.check_event`,
`Runtime.step_observers` and the function modules a worker loads."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from harness.composition import extend_runtime
from harness.errors import InvalidEventError
from harness.runtime import Runtime, publish
from tests.test_import_graph import ROOT, _graph

PRODUCT = (
    "channels",
    "harness.agent",
    "harness.addresses",
    "harness.chat_client",
    "harness.cli",
    "harness.commands",
    "harness.composition",
    "harness.events",
    "harness.fleet_functions",
    "harness.llm",
    "harness.mcp",
    "harness.plugins",
    "harness.records",
    "harness.sidecar",
    "harness.tools",
    "harness.web",
)


def _is_product(module: str) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in PRODUCT)


def test_engine_layer_imports_nothing_of_the_product_even_indirectly() -> None:
    # Given the import graph, function-local imports included
    graph = _graph()
    engine = [m for m in graph if m == "harness.runtime" or m.startswith("harness.runtime.")]

    # When following every import the engine's modules make, and those modules make
    reached: dict[str, str] = {}
    todo = [(m, m) for m in engine]
    while todo:
        module, via = todo.pop()
        for target in graph[module]:
            if target not in reached:
                reached[target] = via
                todo.append((target, via))

    # Then no product module is among them
    leaks = sorted(
        f"{target} (from {via})" for target, via in reached.items() if _is_product(target)
    )
    assert leaks == [], f"the engine reaches product modules: {leaks}"


ENGINE_ALONE = textwrap.dedent(
    """
    import sys

    import fakeredis

    from harness.runtime import Runtime, event, function, publish
    from harness.runtime.functions import FunctionRegistry
    from harness.runtime.kicker import RecordingKicker
    from harness.runtime.testing import drain

    registry = FunctionRegistry()

    @function(id="double", trigger=event("app/number"), registry=registry)
    def double(ctx):
        return ctx.step.run("twice", lambda: ctx.event.data["n"] * 2)

    runtime = Runtime(redis=fakeredis.FakeRedis(decode_responses=True),
                      kicker=RecordingKicker(), registry=registry)
    runtime.register_functions()
    result = publish({"name": "app/number", "data": {"n": 21}}, runtime=runtime)
    drain(runtime)
    [run_id] = result.run_ids
    print(runtime.ledger.run(run_id).result)
    product = ("channels", "harness.agent", "harness.events", "harness.records", "harness.llm",
               "harness.tools", "harness.web", "harness.sidecar", "harness.composition")
    print(sorted(m for m in sys.modules if m.startswith(product)))
    """
)


def test_engine_runs_a_users_function_in_a_process_that_loads_no_product_module() -> None:
    # Given a fresh interpreter that imports only the engine, and a function of its own
    # When it publishes an event and drains the runs
    done = subprocess.run(
        [sys.executable, "-c", ENGINE_ALONE], cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip

    # Then the function's run returned its result, and no product module was ever loaded
    assert done.returncode == 0, done.stderr
    output, loaded = done.stdout.strip().splitlines()[-2:]
    assert output == "42"
    assert loaded == "[]"


def test_engine_runtime_checks_its_own_events_and_leaves_the_products_alone(
    runtime: Runtime,
) -> None:
    # Given an engine runtime that was never extended by the product
    engine = Runtime(redis=runtime.redis, kicker=runtime.kicker, keys=runtime.keys)

    # Then an event the engine emits is checked against its model
    with pytest.raises(InvalidEventError, match="function_id"):
        publish({"name": "function.failed", "data": {}}, runtime=engine)
    # And a message event with wrong data is just an event to it
    publish({"name": "agent.message.received", "data": {"text": 3}}, runtime=engine)

    # When the product extends it (as every fleet process does), the message is checked too
    with pytest.raises(InvalidEventError, match=r"agent\.message\.received"):
        publish(
            {"name": "agent.message.received", "data": {"text": 3}}, runtime=extend_runtime(engine)
        )
