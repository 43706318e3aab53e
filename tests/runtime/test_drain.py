"""`drain` runs a runtime in this thread; a test may hold some runs back while the rest go on."""

from __future__ import annotations

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain


def _two_runs(registry: FunctionRegistry, runtime: Runtime) -> tuple[str, str]:
    @function(id="noop", trigger=event("app/go"), registry=registry)
    def noop(ctx: Context) -> str:
        return "ok"

    runtime.register_functions()
    first = publish({"name": "app/go", "id": "e1"}, runtime=runtime).run_ids[0]
    second = publish({"name": "app/go", "id": "e2"}, runtime=runtime).run_ids[0]
    return first, second


def test_drain_leaves_the_kicks_of_held_runs_pending(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two runs kicked, the second held back
    first, second = _two_runs(registry, runtime)
    # When the runtime is drained holding the second
    outcomes = drain(runtime, hold={second})
    # Then only the first ran, and the second's kick waits, not yet run
    assert outcomes == [(first, "completed")]
    assert isinstance(runtime.kicker, RecordingKicker)
    assert [k.run_id for k in runtime.kicker.pending] == [second]
    record = runtime.ledger.run(second)
    assert record is not None and record.status != "completed", record


def test_drain_runs_a_held_run_once_it_is_no_longer_held(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run held back by a drain
    _first, second = _two_runs(registry, runtime)
    drain(runtime, hold={second})
    # When the runtime is drained again, holding nothing
    outcomes = drain(runtime)
    # Then the held run runs from its kept kick
    assert outcomes == [(second, "completed")]
