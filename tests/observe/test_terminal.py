"""`harness runs` filters, `runs fork --from` (alias `rerun`), `runs replay`, `harness usage`
and JSON log lines."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.observe.json_logs import JsonFormatter
from harness.records.usage import usage_store
from harness.runtime import Context, Runtime, event, function, publish, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.log_context import enter_run
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


@pytest.fixture
def cli_runtime(runtime: Runtime) -> Iterator[Runtime]:
    """The fakeredis runtime as the process's runtime, as the CLI finds it."""
    set_runtime(runtime)
    yield runtime
    set_runtime(None)


def _counting(rt: Runtime, registry: FunctionRegistry, calls: list[str]) -> str:
    @function(id="counting", trigger=event("app/count"), registry=registry)
    def counting(ctx: Context) -> int:
        a = ctx.step.run("first", lambda: calls.append("first") or 1)
        b = ctx.step.run("second", lambda: calls.append("second") or 2)
        return int(a) + int(b)

    @function(id="other", trigger=event("app/other"), retries=0, registry=registry)
    def other(ctx: Context) -> None:
        raise RuntimeError("boom")

    rt.register_functions()
    run_id = publish({"name": "app/count", "data": {"session_key": "s-1"}}, runtime=rt).run_ids[0]
    publish({"name": "app/other"}, runtime=rt)
    drain(rt)
    return run_id


def test_runs_filters_by_function_session_and_status(
    cli_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a completed run of one function and a failed run of another
    run_id = _counting(cli_runtime, registry, [])
    runner = CliRunner()
    # When the runs are listed with filters
    by_function = json.loads(
        runner.invoke(app, ["runs", "--function", "counting", "--json"]).output
    )
    by_session = json.loads(runner.invoke(app, ["runs", "--session", "s-1", "--json"]).output)
    failed = json.loads(runner.invoke(app, ["runs", "--status", "failed", "--json"]).output)
    recent = json.loads(runner.invoke(app, ["runs", "--since", "1h", "--json"]).output)
    # Then each shows only the matching runs
    assert [r["id"] for r in by_function] == [run_id]
    assert [r["id"] for r in by_session] == [run_id]
    assert [r["function_id"] for r in failed] == ["other"]
    assert len(recent) == 2


@pytest.mark.parametrize("command", ["fork", "rerun"])
def test_fork_from_a_step_replays_the_steps_before_it(
    cli_runtime: Runtime, registry: FunctionRegistry, command: str
) -> None:
    # Given a finished two-step run
    calls: list[str] = []
    run_id = _counting(cli_runtime, registry, calls)
    calls.clear()
    # When it is forked (or rerun, the old name) from its second step
    result = CliRunner().invoke(app, ["runs", command, run_id, "--from", "second:0"])
    assert result.exit_code == 0, result.output
    new_id = result.output.split()[-1]
    drain(cli_runtime)
    # Then the new run completed, running only the second step again
    record = cli_runtime.ledger.run(new_id)
    assert new_id != run_id and record is not None and record.status == "completed"
    assert record.result == 3
    assert calls == ["second"]


def test_fork_from_an_unknown_step_says_which_steps_exist(
    cli_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a finished run
    run_id = _counting(cli_runtime, registry, [])
    # When it is forked from a step it never had
    result = CliRunner().invoke(app, ["runs", "fork", run_id, "--from", "nope:0"])
    # Then the command fails, naming the steps it has
    assert result.exit_code != 0
    assert "first:0" in result.output, result.output


def test_replay_of_an_unchanged_run_prints_identical_and_exits_0(
    cli_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a finished two-step run
    calls: list[str] = []
    run_id = _counting(cli_runtime, registry, calls)
    calls.clear()
    # When it is replayed, in text and as JSON
    text = CliRunner().invoke(app, ["runs", "replay", run_id[:12]])
    as_json = CliRunner().invoke(app, ["runs", "replay", run_id, "--json"])
    # Then both say identical, exit 0, and no step ran
    assert text.exit_code == 0, text.output
    assert text.output.startswith("identical (2 steps"), text.output
    assert as_json.exit_code == 0 and json.loads(as_json.output)["identical"] is True
    assert calls == []


def test_replay_of_changed_code_names_the_first_differing_step_and_exits_1(
    cli_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a finished run, and its function changed to ask for another step first
    run_id = _counting(cli_runtime, registry, [])

    @function(id="counting", trigger=event("app/count"), registry=registry)
    def counting(ctx: Context) -> int:
        return int(ctx.step.run("zeroth", lambda: 0))

    # When it is replayed
    result = CliRunner().invoke(app, ["runs", "replay", run_id])
    # Then the command fails, naming the new step
    assert result.exit_code == 1, result.output
    assert result.output.startswith("first differing step: zeroth:0"), result.output


def test_usage_json_gives_tokens_and_unknown_cost_per_model(
    cli_runtime: Runtime, clock: ManualClock
) -> None:
    # Given two calls of an unpriced model recorded today
    for _ in range(2):
        usage_store(cli_runtime).add(
            cli_runtime.now_ms(), {"model": "local-x", "in": 10, "out": 5},
            session="s-1", function="f",
        )  # fmt: skip
    # When `harness usage --by model --json` runs
    result = CliRunner().invoke(app, ["usage", "--by", "model", "--json"])
    # Then it sums both calls and says the cost is unknown (null), not 0
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [
        {
            "group": "local-x", "calls": 2, "input_tokens": 20, "output_tokens": 10,
            "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": None,
        }
    ]  # fmt: skip


def test_json_log_lines_carry_the_run_and_redact_secrets() -> None:
    # Given a logger writing JSON inside a run
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.observe.json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        enter_run("r123", "agent-handle-message", "chat-9")
        # When it logs a line quoting a key
        logger.warning("calling with %s", "sk-ant-api03-abcdefghijklmnop")
    finally:
        enter_run("", "", "")
        logger.removeHandler(handler)
    # Then the line is one JSON object with the run's context and no key
    line = json.loads(stream.getvalue())
    assert line["run_id"] == "r123" and line["function"] == "agent-handle-message"
    assert line["session_key"] == "chat-9" and line["level"] == "WARNING"
    assert "sk-ant" not in line["message"] and "[REDACTED]" in line["message"]


def test_runs_show_previews_the_trigger_event_bounded_and_redacted(
    cli_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run triggered by an event carrying an API key and a long text
    @function(id="triggered", trigger=event("app/trig"), registry=registry)
    def triggered(ctx: Context) -> int:
        return 1

    cli_runtime.register_functions()
    key = "sk-ant-api03-TRIGGERSECRETvalue1234567890"
    data = {"note": f"use {key}", "body": "y" * 5000}
    run_id = publish({"name": "app/trig", "data": data}, runtime=cli_runtime).run_ids[0]
    drain(cli_runtime)
    # When the run is shown, as text and as JSON
    text = CliRunner().invoke(app, ["runs", "show", run_id]).output
    shown = json.loads(CliRunner().invoke(app, ["runs", "show", run_id, "--json"]).output)
    # Then both name the event and preview its data, redacted and bounded
    (line,) = [ln for ln in text.splitlines() if ln.startswith("trigger")]
    assert "app/trig" in line and "[REDACTED]" in line and "yyyy" in line, line
    assert key not in text and key not in json.dumps(shown)
    listed = CliRunner().invoke(app, ["runs", "--json"]).output
    assert run_id in listed and key not in listed
    assert shown["trigger"] == line.removeprefix("trigger").strip()
    assert len(shown["trigger"]) <= 400, len(shown["trigger"])
