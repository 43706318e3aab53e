"""Which run and step the current thread is working on, for log lines (`LOG_FORMAT=json`).

Context variables, so concurrent runs on a worker's threads never see each other's values.
Setting them costs well under a microsecond; nothing reads them unless a formatter does.
"""

from __future__ import annotations

from contextvars import ContextVar

RUN_ID: ContextVar[str] = ContextVar("harness_run_id", default="")
FUNCTION_ID: ContextVar[str] = ContextVar("harness_function_id", default="")
SESSION_KEY: ContextVar[str] = ContextVar("harness_session_key", default="")
STEP: ContextVar[str] = ContextVar("harness_step", default="")


def enter_run(run_id: str, function_id: str, session_key: str) -> None:
    """Note that this thread now executes run `run_id` (until the next `enter_run`)."""
    RUN_ID.set(run_id)
    FUNCTION_ID.set(function_id)
    SESSION_KEY.set(session_key)
    STEP.set("")
