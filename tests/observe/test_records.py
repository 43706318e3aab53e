"""What a run keeps for people: previews, errors, model usage and cost, secrets redacted."""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path

import pytest

from harness.llm import price_overrides, pricing
from harness.observe.run_views import run_view, step_views
from harness.observe.step_details import run_cost, step_detail
from harness.observe.usage_report import totals
from harness.records.usage import usage_store
from harness.redaction import register_secret
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.previews import PREVIEW_CHARS, output_preview, preview, step_preview
from harness.runtime.testing import drain
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock

PLANTED_KEY = "sk-ant-api03-PLANTEDSECRETvalue1234567890"
PLANTED_SETTING = "webhook-secret-planted-42"


class LeaksSecrets(Tool[ToolParams]):
    """A tool whose output carries an API key and a secret setting's value."""

    name = "leaks_secrets"
    description = "Prints the environment."
    parameters = ToolParams

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        return f"ANTHROPIC_API_KEY={PLANTED_KEY} hook={PLANTED_SETTING}"


def test_agent_run_records_previews_usage_and_cost_per_model_step(agent: AgentRig) -> None:
    # Given a model that calls a tool that does not exist, then answers
    agent.model.script(
        Reply.tool("no_such_tool", {"x": 1}, input_tokens=1000, output_tokens=50),
        Reply.answer("done", input_tokens=1200, output_tokens=10, cache_read_tokens=800),
    )
    # When the user writes
    run_id = agent.say("please do it")
    # Then each think step keeps its model and tokens, and the tool step its error output
    journal = agent.runtime.ledger.journal(run_id)
    details = {key: step_detail(key, entry) for key, entry in journal.items()}
    think0 = details["think:0"].usage
    assert think0 is not None and (think0.input_tokens, think0.output_tokens) == (1000, 50)
    assert details["think:1"].usage is not None
    assert details["think:1"].usage.cache_read_tokens == 800
    assert "please do it" in details["think:0"].input, details["think:0"].input
    assert "no_such_tool" in details["tool:0"].output, details["tool:0"].output
    assert all(len(d.input) <= PREVIEW_CHARS and len(d.output) <= PREVIEW_CHARS
               for d in details.values())  # fmt: skip
    tokens, _cost = run_cost(list(details.values()))
    assert tokens == 1000 + 50 + 1200 + 10 + 800


def test_model_step_cost_comes_from_the_price_table(agent: AgentRig) -> None:
    # Given a run on a priced model that used a million input tokens
    agent.model.script(Reply.answer("hi", input_tokens=1_000_000, output_tokens=0))
    run_id = agent.say("hello")
    entry = agent.runtime.ledger.journal(run_id)["think:0"]
    price = pricing.price_for(entry["u"]["model"])
    assert price is not None
    # Then its recorded cost is that model's input price
    usage = step_detail("think:0", entry).usage
    assert usage is not None and usage.cost_usd == pytest.approx(price.input)


def test_unpriced_model_costs_unknown_until_model_prices_names_it() -> None:
    # Given a step of a model the built-in table does not price
    entry = {"k": "run", "v": {}, "u": {"model": "local-llama-9", "in": 1_000_000, "out": 0}}
    # Then its cost is unknown, not $0
    usage = step_detail("think:0", entry).usage
    assert usage is not None and usage.cost_usd is None
    # When MODEL_PRICES prices it
    try:
        price_overrides.apply(json.dumps({"local-llama-9": {"input": 3.0, "output": 9.0}}))
        # Then the same record costs $3 for its million input tokens
        priced = step_detail("think:0", entry).usage
        assert priced is not None and priced.cost_usd == pytest.approx(3.0)
    finally:
        price_overrides.apply("")


def test_builtin_prices_name_their_source_and_date() -> None:
    # Given the built-in table / Then every entry says where it came from and when
    for name, price in pricing.PRICES.items():
        assert price.source and price.as_of, f"{name} has no source or date"


def test_secrets_in_tool_output_and_errors_never_reach_the_records(agent: AgentRig) -> None:
    # Given a secret setting's value, and a tool that prints it and an API key
    register_secret(PLANTED_SETTING)
    agent.deps.tools.register(LeaksSecrets())
    agent.model.script(Reply.tool("leaks_secrets"), Reply.answer("ok"))
    # When the agent runs it
    run_id = agent.say("show env")
    # Then neither secret is in the step's previews, as people see them
    detail = step_detail("tool:0", agent.runtime.ledger.journal(run_id)["tool:0"])
    raw = detail.input + detail.output
    assert PLANTED_KEY not in raw and PLANTED_SETTING not in raw, raw
    assert "[REDACTED]" in detail.output


def test_secret_in_a_step_error_is_redacted_in_the_journal_and_run(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function whose step fails with an error quoting a token
    def fail() -> None:
        raise RuntimeError(f"auth failed with Bearer {PLANTED_KEY[7:]} for {PLANTED_KEY}")

    @function(id="leaky", trigger=event("app/leak"), retries=0, registry=registry)
    def leaky(ctx: Context) -> None:
        ctx.step.run("call", fail)

    runtime.register_functions()
    run_id = publish({"name": "app/leak"}, runtime=runtime).run_ids[0]
    # When it runs and fails
    drain(runtime)
    # Then the step's error and the run's error are redacted
    step_error = runtime.ledger.journal(run_id)["call:0"]["e"]
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "failed"
    for text in (step_error, record.error):
        assert PLANTED_KEY not in text and PLANTED_KEY[7:] not in text, text
        assert "[REDACTED]" in text


def test_retried_step_shows_attempts_and_its_final_preview(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a step that fails once, then succeeds
    tries: list[int] = []

    def flaky(n: int) -> dict[str, int]:
        tries.append(n)
        if len(tries) == 1:
            raise ConnectionError("reset by peer")
        return {"doubled": n * 2}

    @function(id="flaky", trigger=event("app/flaky"), retries=2, registry=registry)
    def run(ctx: Context) -> object:
        return ctx.step.run("call", flaky, 21)

    runtime.register_functions()
    run_id = publish({"name": "app/flaky"}, runtime=runtime).run_ids[0]
    # When it runs, is retried after the backoff
    drain(runtime)
    clock.advance(5)
    drain(runtime)
    # Then its record shows two attempts, its input and its output
    record = runtime.ledger.run(run_id)
    assert record is not None
    entry = runtime.ledger.journal(run_id)["call:0"]
    steps = step_views(run_view(record), runtime.ledger.journal(run_id))
    assert [(s.key, s.status, s.attempts) for s in steps] == [("call:0", "completed", 2)]
    detail = step_detail("call:0", entry)
    assert (detail.input, detail.output) == ("21", '{"doubled":42}')


def test_model_steps_add_to_the_days_usage_totals(agent: AgentRig) -> None:
    # Given two model calls in one session
    agent.model.script(
        Reply.tool("no_such_tool", input_tokens=10, output_tokens=1),
        Reply.answer("ok", input_tokens=20, output_tokens=2),
    )
    # When the run is done
    agent.say("hi", session="chat-usage")
    # Then the day's totals for that session count both calls
    today = date.fromtimestamp(agent.runtime.clock())
    rows = usage_store(agent.runtime).rows(today, today)
    [total] = totals(rows, "session")
    assert (total.group, total.calls, total.input_tokens, total.output_tokens) == (
        "chat-usage",
        2,
        30,
        3,
    )


def test_usage_totals_expire_after_the_usage_retention(agent: AgentRig) -> None:
    # Given a run that used a model
    agent.model.script(Reply.answer("ok"))
    agent.say("hi")
    # Then the day's totals expire after USAGE_RETENTION_DAYS (90 by default), not with runs
    [key] = agent.runtime.redis.keys(f"{agent.runtime.keys.prefix}:usage:*")
    ttl = agent.runtime.redis.ttl(key)
    assert 89 * 86_400 < ttl <= 90 * 86_400, ttl


def test_finished_runs_expire_after_the_run_retention(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a runtime keeping runs for 2 days
    runtime.retention_s = 2 * 86_400

    @function(id="short", trigger=event("app/short"), registry=registry)
    def short(ctx: Context) -> int:
        return int(ctx.step.run("one", lambda: 1))

    runtime.register_functions()
    run_id = publish({"name": "app/short"}, runtime=runtime).run_ids[0]
    # When the run completes
    drain(runtime)
    # Then its record and journal expire in 2 days
    for key in (runtime.keys.run(run_id), runtime.keys.journal(run_id)):
        assert 0 < runtime.redis.ttl(key) <= 2 * 86_400, key


def test_previews_redact_a_secret_cut_by_the_limit_and_read_outputs_from_the_value() -> None:
    # Given a Telegram token that starts just before the preview's limit
    token = "123456789:" + "AAH" + "q" * 32
    text = "a" * (PREVIEW_CHARS - 20) + " " + token
    # When it is previewed, Then no part of the token's secret half is shown
    shown = preview(text)
    assert len(shown) <= PREVIEW_CHARS and "AAHqq" not in shown, shown[-40:]
    # Given journal entries with and without a stored output preview
    old = {"k": "run", "v": {"a": 1}, "o": "as recorded"}
    new = {"k": "run", "v": {"key": "value", "n": [1, 2, 3, 4, 5]}}
    # Then an old one shows what it recorded, a new one a preview of its value
    assert output_preview(old) == "as recorded"
    assert output_preview(new) == '{"key":"value","n":[...3 more,4,5]}'
    assert output_preview({"k": "run", "e": "boom"}) == ""


def test_a_step_given_an_object_previews_its_type_not_its_repr() -> None:
    # Given a step handed the runtime-like object (a dataclass whose repr walks everything it
    # holds) next to a path, which has a text of its own
    @dataclasses.dataclass
    class Services:
        functions: list[str]

    held = Services(functions=[f"fn-{n}" for n in range(1000)])
    # When the step's input is previewed
    shown = step_preview((held, Path("/srv/workspace"), "chat-1"), {}, None)
    # Then the object shows as its type name, the path as itself, and nothing it holds
    assert shown == ',"i":' + json.dumps('[<Services>,/srv/workspace,"chat-1"]'), shown
