"""A step that fails keeps its traceback in the journal (`tb`), redacted and bounded, for the
dashboard to show."""

from __future__ import annotations

from harness.errors import NonRetriableError
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.run_step import MAX_TRACEBACK_CHARS, traceback_text
from harness.runtime.testing import drain

TOKEN = "sk-ant-api03-" + "T" * 40


def test_failed_step_records_its_traceback_redacted(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a step that fails for good in a helper, naming a key
    def inner() -> None:
        raise NonRetriableError(f"rejected key {TOKEN}")

    @function(id="tb-fn", trigger=event("app/tb"), registry=registry)
    def handler(ctx: Context) -> None:
        ctx.step.run("call", inner)

    runtime.register_functions()
    run_id = publish({"name": "app/tb", "data": {}}, runtime=runtime).run_ids[0]
    # When it runs
    drain(runtime)
    # Then its journal entry keeps the traceback down to the raising frame, key masked
    (entry,) = runtime.ledger.journal(run_id).values()
    assert "in inner" in entry["tb"] and "NonRetriableError" in entry["tb"], entry
    assert TOKEN not in entry["tb"] and "[REDACTED]" in entry["tb"]


def test_traceback_text_keeps_the_end_of_a_long_traceback() -> None:
    # Given an exception with a huge message, raised so it has a traceback
    try:
        raise ValueError("x" * (3 * MAX_TRACEBACK_CHARS) + " END")
    except ValueError as exc:
        error = exc
    # When its text is made / Then it is bounded and keeps the end (where it raised)
    text = traceback_text(error)
    assert len(text) <= MAX_TRACEBACK_CHARS and text.rstrip().endswith("END"), text[-80:]
