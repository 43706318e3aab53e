"""The OpenTelemetry side of `harness.observe.tracing`: the one module that imports the SDK.

Imported only when tracing is configured (the `otel` extra). Spans use our own
`TracerProvider`, not the global one, so a library that sets the global provider does not
change where our spans go. Model steps follow the GenAI semantic conventions: the span is
named `chat <model>` and carries `gen_ai.operation.name`, `gen_ai.provider.name` (and the
older `gen_ai.system`), `gen_ai.request.model`, `gen_ai.response.model`,
`gen_ai.response.finish_reasons` and the `gen_ai.usage.*` token counts, where
`gen_ai.usage.input_tokens` counts all input, cached or not, as the conventions ask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode

if TYPE_CHECKING:  # the protocols this module implements; tracing imports this module
    from harness.observe.tracing import RunSpan, StepSpan, Tracer

SCOPE = "harness"
# Model names by the provider that serves them, for answers that do not name their provider.
_PROVIDER_PREFIXES = (("claude", "anthropic"), ("gpt", "openai"), ("o1", "openai"),
                      ("o3", "openai"), ("o4", "openai"), ("chatgpt", "openai"))  # fmt: skip


def provider_of(answer: dict[str, Any], model: str) -> str:
    """The GenAI provider name of a model's answer: its own `provider` field, else the one
    its model name implies, else `unknown`."""
    named = answer.get("provider")
    if isinstance(named, str) and named:
        return named
    lowered = model.lower()
    for prefix, provider in _PROVIDER_PREFIXES:
        if lowered.startswith(prefix):
            return provider
    return "unknown"


class OtelStepSpan:
    """A step's span. Must not raise: tracing never fails a step."""

    def __init__(self, span: Span) -> None:
        self._span = span
        self._open = True

    def model_call(self, answer: dict[str, Any], usage: dict[str, Any]) -> None:
        """Name the span `chat <model>` and add the GenAI attributes."""
        model = str(usage.get("model", ""))
        provider = provider_of(answer, model)
        inputs, output = int(usage.get("in", 0)), int(usage.get("out", 0))
        cache_read, cache_write = int(usage.get("cr", 0)), int(usage.get("cw", 0))
        span = self._span
        span.update_name(f"chat {model}")
        span.set_attributes(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.system": provider,
                "gen_ai.request.model": model,
                "gen_ai.response.model": model,
                "gen_ai.usage.input_tokens": inputs + cache_read + cache_write,
                "gen_ai.usage.output_tokens": output,
                "gen_ai.usage.cache_read.input_tokens": cache_read,
                "gen_ai.usage.cache_creation.input_tokens": cache_write,
            }
        )
        stop = answer.get("stop_reason")
        if isinstance(stop, str) and stop:
            span.set_attribute("gen_ai.response.finish_reasons", [stop])
        # The model call priced itself (0.0 for a model without a price: then it is left out).
        cost = answer.get("cost_usd")
        if isinstance(cost, int | float) and cost > 0:
            span.set_attribute("harness.cost_usd", float(cost))

    def failed(self, error: str, error_type: str, *, final: bool) -> None:
        """Mark the span as an error with the (redacted) error text."""
        self._span.set_attributes({"error.type": error_type, "harness.step.final": final})
        self._span.set_status(Status(StatusCode.ERROR, error))

    def end(self) -> None:
        """End the span once."""
        if self._open:
            self._open = False
            self._span.end()


class OtelRunSpan:
    """A run execution's span; its step spans are its children."""

    def __init__(self, tracer: trace.Tracer, span: Span) -> None:
        self._tracer = tracer
        self._span = span
        self._context = trace.set_span_in_context(span)
        self._open = True

    def step(self, key: str, kind: str, attempt: int) -> StepSpan:
        """Start the child span `step <key>`."""
        span = self._tracer.start_span(
            f"step {key}",
            context=self._context,
            attributes={"harness.step.key": key, "harness.step.kind": kind,
                        "harness.step.attempt": attempt},
        )  # fmt: skip
        return OtelStepSpan(span)

    def finish(self, outcome: str, error: str = "") -> None:
        """End the span with `harness.run.outcome`; failed runs get an error status."""
        if not self._open:
            return
        self._open = False
        self._span.set_attribute("harness.run.outcome", outcome)
        if outcome == "failed":
            self._span.set_status(Status(StatusCode.ERROR, error))
        self._span.end()


class OtelTracer:
    """Run spans from one `TracerProvider`."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer(SCOPE)

    def run(self, run_id: str, function_id: str, session_key: str, attempt: int) -> RunSpan:
        """Start the span `run <function>` as the root of a trace."""
        attributes: dict[str, str | int] = {
            "harness.run.id": run_id,
            "harness.function.id": function_id,
            "harness.run.attempt": attempt,
        }
        if session_key:
            attributes["harness.session.key"] = session_key
        span = self._tracer.start_span(
            f"run {function_id}", context=trace.set_span_in_context(trace.INVALID_SPAN),
            attributes=attributes,
        )  # fmt: skip
        return OtelRunSpan(self._tracer, span)


def tracer_with(processor: SpanProcessor) -> Tracer:
    """A tracer whose spans go to `processor` (tests hand it an in-memory exporter's)."""
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "harness"}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(processor)
    return OtelTracer(provider)


def otlp_tracer() -> Tracer:
    """A tracer exporting over OTLP/HTTP in batches to the endpoint the `OTEL_*` variables
    name. `OTEL_SERVICE_NAME` overrides the service name `harness`."""
    # The exporter is imported here, not at the top: tests use the SDK without it.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return tracer_with(BatchSpanProcessor(OTLPSpanExporter()))
