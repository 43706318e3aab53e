"""Traces of runs and steps, behind one seam: a `Tracer` gives a span per run execution, and
each run span a child span per step it executes.

`tracer_from_env()` is the no-op tracer unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; only then does it import `harness.observe.otel`,
and with it the OpenTelemetry SDK (the `otel` extra). So a deployment without tracing imports
nothing of OpenTelemetry on our account, and each step pays two calls to empty methods.

What a span may carry is decided here, not by the backend: ids, kinds, attempts, token
counts and the already-redacted error text. Never a step's input or output.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

log = logging.getLogger(__name__)
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class StepSpan(Protocol):
    """One execution of one step. Every method must not raise."""

    def model_call(self, answer: dict[str, Any], usage: dict[str, Any]) -> None:
        """The step returned a model's answer: add the GenAI attributes and token counts.
        `usage` is `harness.runtime.previews.usage_of(answer)`."""

    def failed(self, error: str, error_type: str, *, final: bool) -> None:
        """The step raised; `error` is already redacted. `final`: no retry follows."""

    def end(self) -> None:
        """Close the span. Idempotent."""


class RunSpan(Protocol):
    """One execution of a run (a run suspended and resumed has one per execution)."""

    def step(self, key: str, kind: str, attempt: int) -> StepSpan:
        """Open the child span of step `key` (e.g. `think:0`) of `kind` (`run`, `send`, ...)."""

    def finish(self, outcome: str, error: str = "") -> None:
        """Close the span with the execution's outcome (`completed`, `failed`, `suspended`,
        ...); `error` is already redacted. Idempotent."""


class Tracer(Protocol):
    """Where run spans come from."""

    def run(self, run_id: str, function_id: str, session_key: str, attempt: int) -> RunSpan:
        """Open the span of one execution of run `run_id`."""


class _NoStep:
    def model_call(self, answer: dict[str, Any], usage: dict[str, Any]) -> None:
        return None

    def failed(self, error: str, error_type: str, *, final: bool) -> None:
        return None

    def end(self) -> None:
        return None


class _NoRun:
    def step(self, key: str, kind: str, attempt: int) -> StepSpan:
        return NO_STEP

    def finish(self, outcome: str, error: str = "") -> None:
        return None


class NoTracer:
    """Tracing off: every span is the same do-nothing object."""

    def run(self, run_id: str, function_id: str, session_key: str, attempt: int) -> RunSpan:
        """The do-nothing run span."""
        return NO_RUN


NO_STEP: StepSpan = _NoStep()
NO_RUN: RunSpan = _NoRun()
NO_TRACER: Tracer = NoTracer()


def tracing_wanted(environ: dict[str, str] | None = None) -> bool:
    """True when an OTLP endpoint is configured in `environ` (default: the process's)."""
    env = os.environ if environ is None else environ
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def tracer_from_env(environ: dict[str, str] | None = None) -> Tracer:
    """The OTLP tracer when an endpoint is configured, else `NO_TRACER`. When the endpoint is
    set but the `otel` extra is not installed, says so in one warning and traces nothing.
    The exporter reads the standard `OTEL_*` variables (endpoint, headers, service name)."""
    if not tracing_wanted(environ):
        return NO_TRACER
    try:
        # Optional extra: imported only here, only when tracing is configured.
        from harness.observe import otel
    except ImportError as exc:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed (%s); "
            "install the extra: pip install 'harness[otel]'. Tracing is off.",
            exc,
        )
        return NO_TRACER
    return otel.otlp_tracer()
