"""The project's error hierarchy. Third-party errors are translated into these at each seam.

HarnessError
├── ConfigurationError        a setting is missing or wrong
├── InvalidEventError         an event failed validation; nothing was published
├── InvalidFunctionError      a function declaration is wrong (bad cron, bad key path, ...)
├── FunctionNotFoundError     a run names a function this process does not know
├── StepError                 a step failed
│   ├── StepFailedError       a step spent its retries; raised into the handler on replay
│   ├── StepResultError       a step's result cannot be stored as JSON
│   └── NonDeterminismError   the handler asked for steps in another order than recorded
├── NonRetriableError         raise this from a step or handler to fail without retries
└── RunTimeoutError           one execution of a function outlived its timeout (sidecar)
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error this project raises on purpose."""


class ConfigurationError(HarnessError):
    """A setting is missing or has a value that cannot work."""


class InvalidEventError(HarnessError, ValueError):
    """An event did not validate. Nothing was published."""


class InvalidFunctionError(HarnessError, ValueError):
    """A function declaration is wrong: bad trigger, cron expression or key path."""


class FunctionNotFoundError(HarnessError):
    """A run names a function that no loaded module declares."""


class StepError(HarnessError):
    """A durable step could not complete."""


class StepFailedError(StepError):
    """A step raised on every attempt. Carries the last error's text."""

    def __init__(self, step_id: str, error: str) -> None:
        super().__init__(f"step {step_id!r} failed: {error}")
        self.step_id = step_id
        self.error = error


class StepResultError(StepError, TypeError):
    """A step returned something that is not JSON-serialisable; the step cannot be recorded."""


class NonDeterminismError(StepError):
    """On replay the handler asked for a step of another kind than the journal holds."""


class NonRetriableError(HarnessError):
    """Raise from a step or a handler to fail at once, skipping remaining retries."""


class RunTimeoutError(HarnessError):
    """One execution of a function ran longer than its timeout; the run fails without retries."""
