"""OpenTelemetry spans of runs and steps, exported to the SDK's in-memory exporter; and
nothing of OpenTelemetry imported by us when no endpoint is configured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harness.observe.otel import tracer_with
from harness.observe.tracing import NO_TRACER, tracer_from_env
from harness.redaction import register_secret
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply
from tests.observe.test_records import PLANTED_KEY, PLANTED_SETTING, LeaksSecrets
from tests.runtime_fixtures import ManualClock

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def exported(runtime: Runtime) -> Iterator[InMemorySpanExporter]:
    """The runtime traces into an in-memory exporter (spans are exported as they end)."""
    exporter = InMemorySpanExporter()
    runtime.tracer = tracer_with(SimpleSpanProcessor(exporter))
    yield exporter
    runtime.tracer = NO_TRACER


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


def _all_text(spans: tuple[ReadableSpan, ...]) -> str:
    """Every attribute, status and event of `spans` as one string, to look for secrets in."""
    parts = []
    for span in spans:
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        parts.append(str(span.status.description))
        parts.extend(json.dumps(dict(e.attributes or {}), default=str) for e in span.events)
    return "\n".join(parts)


def test_agent_run_exports_a_run_span_with_step_spans_and_genai_attributes(
    agent: AgentRig, exported: InMemorySpanExporter
) -> None:
    # Given a model that calls a tool printing secrets, then answers
    register_secret(PLANTED_SETTING)
    agent.deps.tools.register(LeaksSecrets())
    agent.model.script(
        Reply.tool("leaks_secrets", input_tokens=1000, output_tokens=50),
        Reply.answer("done", input_tokens=1200, output_tokens=10, cache_read_tokens=800),
    )
    # When the user writes and the run completes
    run_id = agent.say("show env")
    spans = tuple(s for s in exported.get_finished_spans()
                  if (s.attributes or {}).get("harness.run.id") == run_id
                  or s.parent is not None)  # fmt: skip
    # Then there is one run span, the root of its trace, and every step span is its child
    runs = [s for s in spans if s.name.startswith("run ")]
    assert len(runs) == 1, [s.name for s in spans]
    (run,) = runs
    assert run.parent is None and run.attributes is not None
    assert run.attributes["harness.run.outcome"] == "completed"
    steps = [s for s in spans if s.parent is not None and s.parent.span_id == run.context.span_id]
    keys = [str((s.attributes or {}).get("harness.step.key")) for s in steps]
    assert {"think:0", "tool:0", "think:1"} <= set(keys), keys
    assert all(s.context.trace_id == run.context.trace_id for s in steps)
    # And the model steps follow the GenAI conventions, with their token counts
    model_steps = {str((s.attributes or {})["harness.step.key"]): s for s in steps
                   if (s.attributes or {}).get("gen_ai.operation.name") == "chat"}  # fmt: skip
    assert set(model_steps) == {"think:0", "think:1"}, keys
    second = model_steps["think:1"].attributes
    assert second is not None
    model = str(second["gen_ai.request.model"])
    assert model_steps["think:1"].name == f"chat {model}"
    assert second["gen_ai.provider.name"] == "anthropic"
    assert second["gen_ai.usage.input_tokens"] == 1200 + 800
    assert second["gen_ai.usage.cache_read.input_tokens"] == 800
    assert second["gen_ai.usage.output_tokens"] == 10
    first = model_steps["think:0"].attributes
    assert first is not None and first["gen_ai.usage.input_tokens"] == 1000
    assert first["gen_ai.response.finish_reasons"] == ("tool_use",)
    # And no secret the tool printed reached any span
    text = _all_text(spans)
    assert PLANTED_KEY not in text and PLANTED_SETTING not in text, text


def test_failed_step_span_has_error_status_and_a_redacted_error(
    runtime: Runtime, registry: FunctionRegistry, exported: InMemorySpanExporter
) -> None:
    # Given a function whose second step fails quoting an API key
    def fail() -> None:
        raise RuntimeError(f"auth failed for {PLANTED_KEY}")

    @function(id="leaky-trace", trigger=event("app/leak"), retries=0, registry=registry)
    def leaky(ctx: Context) -> None:
        ctx.step.run("fine", lambda: 1)
        ctx.step.run("call", fail)

    runtime.register_functions()
    publish({"name": "app/leak"}, runtime=runtime)
    # When it runs and fails
    drain(runtime)
    spans = exported.get_finished_spans()
    named = _by_name(spans)
    # Then the failing step's span is an error, with the error type and redacted text
    call, fine, run = named["step call:0"], named["step fine:0"], named["run leaky-trace"]
    assert call.status.status_code is StatusCode.ERROR
    assert "[REDACTED]" in str(call.status.description), call.status.description
    assert call.attributes is not None and call.attributes["error.type"] == "RuntimeError"
    assert fine.status.status_code is StatusCode.UNSET
    # And the run's span failed too, and holds both steps
    assert run.status.status_code is StatusCode.ERROR
    assert call.parent is not None and call.parent.span_id == run.context.span_id
    assert fine.parent is not None and fine.parent.span_id == run.context.span_id
    assert PLANTED_KEY not in _all_text(spans)


def test_tracer_from_env_is_off_without_an_endpoint_and_on_with_one() -> None:
    # Given no endpoint, Then tracing is off; Given one, Then the OTLP tracer is used
    assert tracer_from_env({}) is NO_TRACER
    assert tracer_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}) is NO_TRACER
    tracer = tracer_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert tracer is not NO_TRACER
    tracer.provider.shutdown()  # type: ignore[attr-defined]


_WITHOUT_OTEL = textwrap.dedent(
    """
    import importlib.abc, json, sys

    attempts = []

    class Refuse(importlib.abc.MetaPathFinder):
        # Refuses OpenTelemetry as if it were not installed, noting who asked for it.
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] != "opentelemetry":
                return None
            frame = sys._getframe(1)
            skip = ("importlib", "_frozen")
            while frame and frame.f_globals.get("__name__", "").startswith(skip):
                frame = frame.f_back
            attempts.append([name, frame.f_globals.get("__name__", "") if frame else ""])
            raise ModuleNotFoundError(name)

    sys.meta_path.insert(0, Refuse())
    import redis
    from harness.observe.tracing import tracer_from_env
    from harness.runtime import Runtime, event, function, publish
    from harness.runtime.functions import FunctionRegistry
    from harness.runtime.keys import Keys
    from harness.runtime.kicker import RecordingKicker
    from harness.runtime.testing import drain

    registry = FunctionRegistry()

    @function(id="plain", trigger=event("app/plain"), retries=0, registry=registry)
    def plain(ctx):
        return ctx.step.run("one", lambda: 1) + ctx.step.run("two", lambda: 2)

    client = redis.Redis.from_url(sys.argv[1], decode_responses=True)
    rt = Runtime(redis=client, kicker=RecordingKicker(), registry=registry,
                 keys=Keys("no-otel"), tracer=tracer_from_env())
    rt.register_functions()
    run_id = publish({"name": "app/plain"}, runtime=rt).run_ids[0]
    drain(rt)
    print(json.dumps({
        "status": rt.ledger.run(run_id).status,
        "ours": [a for a in attempts if a[1].startswith(("harness", "channels"))],
        "loaded": sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"
                         or m == "harness.observe.otel"),
    }))
    """
)


def test_a_run_without_an_endpoint_imports_nothing_of_opentelemetry(redis_url: str) -> None:
    # Given a process without OTEL_EXPORTER_OTLP_ENDPOINT, where OpenTelemetry is refused
    # (redis-py itself probes for the SDK at import; only our own imports count)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    # When a two-step run completes in it
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_OTEL, redis_url],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    # Then the run completed, none of our modules asked for OpenTelemetry, and none is loaded
    assert report["status"] == "completed", report
    assert report["ours"] == [], report
    assert report["loaded"] == [], report


def test_a_suspended_run_gives_one_run_span_per_execution_and_marks_where_it_parked(
    runtime: Runtime, registry: FunctionRegistry, exported: InMemorySpanExporter, clock: ManualClock
) -> None:
    # Given a run that sleeps between two steps
    @function(id="sleepy-trace", trigger=event("app/sleepy"), retries=0, registry=registry)
    def sleepy(ctx: Context) -> int:
        ctx.step.run("before", lambda: 1)
        ctx.step.sleep("nap", "5s")
        return int(ctx.step.run("after", lambda: 2))

    runtime.register_functions()
    publish({"name": "app/sleepy"}, runtime=runtime)
    # When it runs, parks, and is woken after the sleep
    drain(runtime)
    clock.advance(6)
    drain(runtime)
    spans = exported.get_finished_spans()
    # Then there are two executions: one suspended at the sleep, one completed
    runs = [s for s in spans if s.name == "run sleepy-trace"]
    outcomes = [(s.attributes or {}).get("harness.run.outcome") for s in runs]
    assert outcomes == ["suspended", "completed"], outcomes
    first, second = runs
    children = {
        run.context.span_id: sorted(
            s.name for s in spans if s.parent and s.parent.span_id == run.context.span_id
        )
        for run in runs
    }
    # And the replayed step gives no span in the second execution
    assert children[first.context.span_id] == ["step before:0", "step nap:0"], children
    assert children[second.context.span_id] == ["step after:0"], children
