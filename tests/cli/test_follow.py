"""`runs show --follow` and `runs fork/rerun --wait/--follow`: steps printed as the run
advances, the run's output at its end, exit code 0 for completed and 1 otherwise."""

from __future__ import annotations

from collections.abc import Iterator

import fakeredis
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.commands.follow import follow_run
from harness.composition import extend_runtime
from harness.runtime import Context, Runtime, event, function, publish, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import DrainingKicker, drain
from tests.runtime_fixtures import ManualClock


def _register(registry: FunctionRegistry) -> None:
    @function(id="two-steps", trigger=event("app/two"), registry=registry)
    def two(ctx: Context) -> str:
        ctx.step.run("first", lambda: 1)
        ctx.step.run("second", lambda: 2)
        return "both done"

    @function(id="breaks", trigger=event("app/break"), retries=0, registry=registry)
    def breaks(ctx: Context) -> None:
        ctx.step.run("first", lambda: 1)
        raise RuntimeError("boom")


def test_follow_prints_each_step_as_the_run_advances(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run that has not started yet, whose second step comes after a ten-second nap
    @function(id="napping", trigger=event("app/nap"), registry=registry)
    def napping(ctx: Context) -> str:
        ctx.step.run("first", lambda: 1)
        ctx.step.sleep("nap", "10s")
        ctx.step.run("second", lambda: 2)
        return "rested"

    runtime.register_functions()
    run_id = publish({"name": "app/nap"}, runtime=runtime).run_ids[0]
    lines: list[str] = []
    looks: list[list[str]] = []

    def worker_moves_on() -> None:
        # Between two looks at the ledger, the worker advances the run as far as it can now
        looks.append(list(lines))
        clock.advance(10)
        drain(runtime)

    # When it is followed while it advances
    record = follow_run(runtime, run_id, lines.append, pause=worker_moves_on)

    # Then each step was printed as it was seen, the nap while it lasted, then the end
    assert record.status == "completed"
    shown = [line.split("  ")[:3] for line in lines]
    assert shown == [
        [f"run {run_id} queued"],
        ["first:0", "run", "completed"],
        ["nap:0", "sleep", "sleeping"],
        [f"run {run_id} sleeping"],
        ["nap:0", "sleep", "completed"],
        ["second:0", "run", "completed"],
        [f"run {run_id} completed"],
    ], lines
    assert looks[1][-1] == f"run {run_id} sleeping", f"the nap was not seen live: {looks}"


@pytest.fixture
def draining(clock: ManualClock, registry: FunctionRegistry) -> Iterator[Runtime]:
    """A fakeredis runtime whose kicks run to the end at once (a worker that keeps up), as the
    process's runtime."""
    server = fakeredis.FakeServer()
    kicker = DrainingKicker()
    rt = extend_runtime(
        Runtime(
            redis=fakeredis.FakeRedis(server=server, decode_responses=True),
            kicker=kicker,
            registry=registry,
            clock=clock,
        )
    )
    kicker.runtime = rt
    _register(registry)
    rt.register_functions()
    set_runtime(rt)
    yield rt
    set_runtime(None)


def test_runs_show_follow_exits_by_how_the_run_ended(draining: Runtime) -> None:
    # Given a completed run and a failed one
    done = publish({"name": "app/two"}, runtime=draining).run_ids[0]
    failed = publish({"name": "app/break"}, runtime=draining).run_ids[0]
    # When each is followed
    ok = CliRunner().invoke(app, ["runs", "show", done, "--follow"])
    bad = CliRunner().invoke(app, ["runs", "show", failed[:12], "-f"])
    # Then the completed one exits 0 with its steps, the failed one 1
    assert ok.exit_code == 0, ok.output
    assert "second:0  run  completed" in ok.output, ok.output
    assert bad.exit_code == 1, bad.output
    assert f"run {failed} failed" in bad.output, bad.output


@pytest.mark.parametrize("command", ["rerun", "fork"])
def test_rerun_wait_prints_the_new_runs_output_and_exits_0(draining: Runtime, command: str) -> None:
    # Given a completed run
    run_id = publish({"name": "app/two"}, runtime=draining).run_ids[0]
    # When it is rerun with --wait
    result = CliRunner().invoke(app, ["runs", command, run_id, "--wait"])
    # Then the new run's output is printed and the exit code is 0
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("started run ") and lines[-1] == "both done", lines


def test_rerun_wait_exits_1_when_the_new_run_fails(draining: Runtime) -> None:
    # Given a failed run
    run_id = publish({"name": "app/break"}, runtime=draining).run_ids[0]
    # When it is rerun with --follow
    result = CliRunner().invoke(app, ["runs", "rerun", run_id, "--follow"])
    # Then its steps and its error are printed, exit 1
    assert result.exit_code == 1, result.output
    assert "first:0  run  completed" in result.output, result.output
    assert "failed: " in result.output and "boom" in result.output, result.output


def test_rerun_without_wait_returns_at_once(runtime: Runtime, registry: FunctionRegistry) -> None:
    # Given a finished run, and no worker to run the new one
    _register(registry)
    runtime.register_functions()
    run_id = publish({"name": "app/two"}, runtime=runtime).run_ids[0]
    drain(runtime)
    set_runtime(runtime)
    try:
        # When it is rerun without --wait
        result = CliRunner().invoke(app, ["runs", "rerun", run_id])
    finally:
        set_runtime(None)
    # Then the command returns 0 with the new id only
    assert result.exit_code == 0, result.output
    assert result.output.strip().startswith("started run "), result.output
