"""Errors of a model call. Each provider module translates its SDK's exceptions into these.

    HarnessError
    └── ModelError                  a model call failed
        ├── TransientModelError     may succeed later: 429, 5xx, 529 overloaded, timeout, network
        ├── ContextOverflowError    the prompt does not fit the model's context: compact, then retry
        ├── PermanentModelError     will fail again as sent: bad key, no access, bad request
        └── ModelCancelledError     the caller's cancel event was set; carries the partial turn

All but `TransientModelError` are also `NonRetriableError`, so a durable step fails at once
instead of spending its retries on a call that cannot succeed. Messages never include the
API key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.errors import HarnessError, NonRetriableError

if TYPE_CHECKING:
    from harness.llm.types import AssistantTurn


class ModelError(HarnessError):
    """A model call failed. `provider` names the wire API; `status_code` is the HTTP status
    when the server answered (None for network errors and cancellation)."""

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class TransientModelError(ModelError):
    """The call may succeed if repeated later. `retry_after` is the server's hint in seconds,
    when it gave one. `retry_for`, set by the caller (`AGENT_MODEL_RETRY_FOR`), is how long
    after the step first failed a durable step keeps retrying it, past its retry count."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code)
        self.retry_after = retry_after
        self.retry_for: float | None = None


class ContextOverflowError(ModelError, NonRetriableError):
    """The prompt is longer than the model accepts. Repeating it fails again; shrink it first."""


class PermanentModelError(ModelError, NonRetriableError):
    """The request is wrong or not allowed (bad key, no access, unknown model, malformed
    conversation). Repeating it fails again."""


class ModelCancelledError(ModelError, NonRetriableError):
    """The cancel event was set while the call was in flight, and the call was abandoned.

    `partial` holds what had streamed in so far, with `stop_reason="cancelled"` and no tool
    calls (an unfinished tool call cannot be run).
    """

    def __init__(self, partial: AssistantTurn, *, provider: str = "") -> None:
        super().__init__("model call cancelled", provider=provider)
        self.partial = partial


def redact_secret(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` (an API key) replaced by `[redacted]`."""
    if secret and secret.strip():
        return text.replace(secret, "[redacted]")
    return text


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's retry hint in seconds, from `retry-after-ms` or a numeric `retry-after`;
    None when absent or unparseable."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None
