"""Exceptions across the host's pipe: each side raises what the other side raised, as far as
the runtime's decisions go (retry, fail at once, a step's failure) and with the same text
(`ValueError: boom` in a run's error, as when the code ran in the executor itself).
"""

from __future__ import annotations

import functools
import re

from harness.errors import (
    EventRefusedError,
    HarnessError,
    InvalidEventDataError,
    InvalidEventError,
    InvokeRefusedError,
    NonDeterminismError,
    NonRetriableError,
    StepError,
    StepFailedError,
    StepResultError,
)
from harness.sidecar.wire import Fault

MAX_MESSAGE_CHARS = 4000
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
# what the trusted side's step API raises on purpose, rebuilt by name in the host so a
# handler can catch it as before
_HOST_CLASSES: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (
        StepResultError,
        NonDeterminismError,
        InvalidEventError,
        InvalidEventDataError,
        EventRefusedError,
        InvokeRefusedError,
        NonRetriableError,
        ValueError,
        TypeError,
    )
}


def fault_of(exc: BaseException) -> Fault:
    """`exc` as a `Fault`."""
    kind = "error"
    if isinstance(exc, StepFailedError):
        kind = "step-failed"
    elif isinstance(exc, StepError):
        kind = "step"
    elif isinstance(exc, NonRetriableError):
        kind = "non-retriable"
    return Fault(
        type=type(exc).__name__[:200],
        message=str(exc)[:MAX_MESSAGE_CHARS],
        kind=kind,  # type: ignore[arg-type]
        step_id=getattr(exc, "step_id", "") if kind == "step-failed" else "",
        error=getattr(exc, "error", "") if kind == "step-failed" else "",
        retry_after=_number(getattr(exc, "retry_after", None)),
        retry_for=_number(getattr(exc, "retry_for", None)),
    )


def host_exception(fault: Fault) -> Exception:
    """In the host: the exception the trusted step API raised (its own class when it is one a
    handler may catch, else `HarnessError` with its text)."""
    if fault.kind == "step-failed":
        return StepFailedError(fault.step_id, fault.error)
    cls = _HOST_CLASSES.get(fault.type)
    return cls(fault.message) if cls is not None else HarnessError(fault.message)


def executor_exception(fault: Fault) -> Exception:
    """In the executor: an exception standing for what the agent's code raised. Its class has
    the original's name (for the run's error text) and the base that makes the runtime take
    the same decision: `StepError` (fail the run), `NonRetriableError` (fail at once) or
    `Exception` (retry); `retry_after` and `retry_for` are kept."""
    name = fault.type if _NAME.match(fault.type) else "Error"
    exc = _remote_error(name, fault.kind)(fault.message)
    if fault.retry_after is not None:
        exc.retry_after = fault.retry_after  # type: ignore[attr-defined]
    if fault.retry_for is not None:
        exc.retry_for = fault.retry_for  # type: ignore[attr-defined]
    return exc


def unencodable(type_name: str) -> object:
    """A value that `json.dumps` refuses as it refused the host's value of type `type_name`,
    so the runtime records the same `StepResultError` (or failed run) as before the split."""
    return _opaque(type_name if _NAME.match(type_name) else "object")()


_BASES: dict[str, type[Exception]] = {
    "step-failed": StepError,
    "step": StepError,
    "non-retriable": NonRetriableError,
}


@functools.lru_cache(maxsize=256)  # names come from the host: bounded
def _remote_error(name: str, kind: str) -> type[Exception]:
    return type(name, (_BASES.get(kind, Exception),), {"__module__": "sidecar_functions"})


@functools.lru_cache(maxsize=256)
def _opaque(name: str) -> type:
    return type(name, (), {"__module__": "sidecar_functions"})


def _number(value: object) -> float | None:
    try:
        return float(value) if value is not None else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
