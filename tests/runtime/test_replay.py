"""Replaying a finished run from its journal: nothing runs for real, nothing is written, and
a code path that changed is named by its first differing step."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.observe.replay_check import check_replay
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.ledger import RunRecord
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


@dataclass
class Code:
    """What the handler does today: which steps in which order, and what it returns."""

    order: tuple[str, ...] = ("first", "second")
    bonus: int = 0
    calls: list[str] = field(default_factory=list)


def _run(rt: Runtime, registry: FunctionRegistry, clock: ManualClock, code: Code) -> RunRecord:
    """A finished run of a function whose steps each take a second."""

    def work(name: str) -> int:
        code.calls.append(name)
        clock.advance(1)
        return len(name)

    @function(id="steps", trigger=event("app/steps"), retries=0, registry=registry)
    def steps(ctx: Context) -> int:
        total = sum(int(ctx.step.run(name, work, name)) for name in code.order)
        if total > 20:
            raise ValueError(f"too many: {total}")
        return total + code.bonus

    rt.register_functions()
    run_id = publish({"name": "app/steps"}, runtime=rt).run_ids[0]
    drain(rt)
    record = rt.ledger.run(run_id)
    assert record is not None and record.status in ("completed", "failed"), record
    return record


def test_replay_of_unchanged_code_is_identical_and_runs_no_step(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished two-step run
    code = Code()
    record = _run(runtime, registry, clock, code)
    journal = runtime.ledger.journal(record.id)
    code.calls.clear()
    # When it is replayed with the same code
    verdict = check_replay(runtime, record)
    # Then the output is identical, no step ran, and the stored run is unchanged
    assert verdict.identical, verdict
    assert verdict.steps == 2
    assert code.calls == []
    assert runtime.ledger.journal(record.id) == journal
    assert runtime.ledger.run(record.id) == record


def test_replay_of_a_new_step_names_it_as_the_first_difference(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished run, and code that now asks for a step in between
    code = Code()
    record = _run(runtime, registry, clock, code)
    code.order = ("first", "middle", "second")
    code.calls.clear()
    # When it is replayed
    verdict = check_replay(runtime, record)
    # Then the new step is the first difference, and it did not run
    assert not verdict.identical
    assert verdict.first_difference == "middle:0", verdict
    assert "no run step" in verdict.reason
    assert code.calls == []


def test_replay_of_steps_in_another_order_names_the_first_out_of_place(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished run of first then second, and code that now asks second first
    code = Code()
    record = _run(runtime, registry, clock, code)
    code.order = ("second", "first")
    # When it is replayed
    verdict = check_replay(runtime, record)
    # Then the step asked for out of its recorded order is named
    assert not verdict.identical
    assert verdict.first_difference == "first:0", verdict
    assert "ran before 'second:0' began" in verdict.reason


def test_replay_of_another_result_prints_a_diff(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished run, and code that now adds to the same steps' results
    code = Code()
    record = _run(runtime, registry, clock, code)
    code.bonus = 100
    # When it is replayed
    verdict = check_replay(runtime, record)
    # Then the recorded and replayed results differ in the diff, at no step
    assert not verdict.identical
    assert verdict.first_difference == ""
    assert '-  "result": 11,' in verdict.diff and '+  "result": 111,' in verdict.diff


def test_replay_of_a_step_the_code_no_longer_asks_for_is_a_difference(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished run, and code that now skips its second step (and returns the same)
    code = Code()
    record = _run(runtime, registry, clock, code)
    code.order, code.bonus = ("first",), 6
    # When it is replayed
    verdict = check_replay(runtime, record)
    # Then the output matches but the unused step is the difference
    assert verdict.recorded == verdict.replayed
    assert not verdict.identical
    assert verdict.first_difference == "second:0" and verdict.unused == ("second:0",)


def test_replay_of_a_failed_run_compares_its_error(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run that failed after its steps
    code = Code(order=("a" * 12, "b" * 12))
    record = _run(runtime, registry, clock, code)
    assert record.status == "failed"
    # When it is replayed
    verdict = check_replay(runtime, record)
    # Then the same error is produced
    assert verdict.identical, verdict
    assert verdict.replayed == {"status": "failed", "error": "ValueError: too many: 24"}
