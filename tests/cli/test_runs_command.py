"""`harness runs`, `runs show` and `runs cancel` against a real Redis: full ids, prefixes, the
step timeline in order, `--json`, and one-line errors."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from typer.testing import CliRunner

from harness.cli import app
from harness.runtime import Context, Runtime, event, function, publish, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from tests.parent_runs import finished_parent
from tests.runtime_fixtures import ManualClock


@pytest.fixture
def cli_runtime(
    redis_client: redis.Redis, registry: FunctionRegistry, clock: ManualClock
) -> Iterator[Runtime]:
    """A drainable runtime on the real Redis, as the process's runtime (as the CLI finds it)."""
    rt = Runtime(redis=redis_client, kicker=RecordingKicker(), registry=registry, clock=clock)
    set_runtime(rt)
    yield rt
    set_runtime(None)


def _three_steps(rt: Runtime, registry: FunctionRegistry, clock: ManualClock) -> str:
    @function(id="three-steps", trigger=event("app/go"), registry=registry)
    def three(ctx: Context) -> int:
        for name in ("zeta", "alpha", "mid"):
            ctx.step.run(name, lambda: clock.advance(1.5) or 1)
        return 3

    rt.register_functions()
    run_id = publish({"name": "app/go", "data": {}}, runtime=rt).run_ids[0]
    drain(rt)
    return run_id


def test_runs_lists_full_ids_when_not_on_a_terminal(
    cli_runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished run
    run_id = _three_steps(cli_runtime, registry, clock)
    # When `harness runs` prints into a pipe
    result = CliRunner().invoke(app, ["runs"])
    # Then the whole id is there
    assert result.exit_code == 0, result.output
    assert run_id in result.output, result.output
    assert "three-steps" in result.output


def test_runs_show_accepts_a_prefix_and_orders_steps_as_they_ran(
    cli_runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose steps ran zeta, alpha, mid (not alphabetical)
    run_id = _three_steps(cli_runtime, registry, clock)
    # When `runs show` is given a prefix of its id
    result = CliRunner().invoke(app, ["runs", "show", run_id[:8]])
    # Then it shows the header and the steps in the order they ran, with durations
    assert result.exit_code == 0, result.output
    assert f"run       {run_id}" in result.output
    assert "status    completed" in result.output
    positions = [result.output.index(f"{name}:0") for name in ("zeta", "alpha", "mid")]
    assert positions == sorted(positions), result.output
    assert "1.5s" in result.output, result.output


def test_runs_show_json_gives_ordered_steps_with_times(
    cli_runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished run
    run_id = _three_steps(cli_runtime, registry, clock)
    # When `runs show --json` runs
    result = CliRunner().invoke(app, ["runs", "show", run_id, "--json"])
    # Then it is JSON with the run and its steps in order, each with start and end times
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["run"]["id"] == run_id
    assert [s["key"] for s in data["steps"]] == ["zeta:0", "alpha:0", "mid:0"]
    assert all(s["t"] - s["s"] == 1500 for s in data["steps"]), data["steps"]


def test_runs_json_lists_runs(
    cli_runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a finished run
    run_id = _three_steps(cli_runtime, registry, clock)
    # When `runs --json` runs
    result = CliRunner().invoke(app, ["runs", "--json"])
    # Then each run is an object with its id and status
    assert result.exit_code == 0, result.output
    assert [(r["id"], r["status"]) for r in json.loads(result.output)] == [(run_id, "completed")]


def test_runs_show_with_an_unknown_id_is_one_line(cli_runtime: Runtime) -> None:
    # Given no runs
    # When `runs show` is asked for one
    result = CliRunner().invoke(app, ["runs", "show", "rnope"])
    # Then one line says there is none, exit 4 (not found)
    assert result.exit_code == 4
    assert result.output.strip().splitlines() == [
        "error: no run starts with 'rnope' (unknown, or older than the retention period)"
    ]


def test_runs_show_with_an_ambiguous_prefix_lists_the_candidates(
    cli_runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given two runs (every run id starts with "r")
    @function(id="two", trigger=event("app/two"), registry=registry)
    def two(ctx: Context) -> None:
        return None

    cli_runtime.register_functions()
    ids = [
        publish({"name": "app/two", "data": {}, "id": f"e{n}"}, runtime=cli_runtime).run_ids[0]
        for n in range(2)
    ]
    # When `runs show r` is asked
    result = CliRunner().invoke(app, ["runs", "show", "r"])
    # Then one line names both, exit 4 (no unique run found)
    assert result.exit_code == 4
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert all(run_id in lines[0] for run_id in ids), lines


UNREACHABLE = [["runs"], ["runs", "show", "r1"], ["runs", "cancel", "r1"], ["events", "tail"]]


@pytest.mark.parametrize("args", UNREACHABLE)
def test_runs_commands_report_an_unreachable_redis_in_one_line(
    unreachable_runtime: Runtime, args: list[str]
) -> None:
    # Given a Redis that does not answer
    set_runtime(unreachable_runtime)
    try:
        # When a runs command runs
        result = CliRunner().invoke(app, args)
    finally:
        set_runtime(None)
    # Then it fails in one line, without a traceback or the password, exit 3 (unreachable)
    assert result.exit_code == 3, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach Redis"), lines
    assert "redis-hunter2" not in result.output


def test_runs_show_lists_the_child_runs_and_their_cost(
    cli_runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a parent that waits for one child, starts another detached, and reports their cost
    run_id = finished_parent(cli_runtime, registry, clock)

    # When `runs show` prints the parent
    result = CliRunner().invoke(app, ["runs", "show", run_id])

    # Then both children are listed with how they were started, and the children's cost
    assert result.exit_code == 0, result.output
    assert "children  cost $0.2500" in result.output, result.output
    assert "wait-for:0 (waited)" in result.output and "spawn:0 (detached)" in result.output
    shown = json.loads(CliRunner().invoke(app, ["runs", "show", run_id, "--json"]).output)
    assert sorted(c["detached"] for c in shown["children"]) == [False, True]


def test_runs_show_gives_a_tool_steps_structured_result(
    cli_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run whose tool step recorded a structured result beside its text
    @function(id="structured", trigger=event("app/go"), registry=registry)
    def structured(ctx: Context) -> None:
        result = {"content": "21 °C in Oslo", "is_error": False, "structured": {"temp_c": 21}}
        ctx.step.run("tool", lambda: result)

    cli_runtime.register_functions()
    run_id = publish({"name": "app/go", "data": {}}, runtime=cli_runtime).run_ids[0]
    drain(cli_runtime)
    # When `runs show` runs, as text and as JSON
    text = CliRunner().invoke(app, ["runs", "show", run_id])
    as_json = CliRunner().invoke(app, ["runs", "show", run_id, "--json"])
    # Then both show the structured part
    assert 'tool:0 structured: {"temp_c": 21}' in text.output, text.output
    (step,) = json.loads(as_json.output)["steps"]
    assert step["structured"] == {"temp_c": 21}, step
