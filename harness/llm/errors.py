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

A refusal a person must fix (a refused key, a spent quota, an unknown model) starts its
message with a `refusal_reason` sentence built from fixed words, the status, the error type
and a variable name. It travels inside the failed run's error text, from which
`failure_reason` takes it back, alone, for the person waiting on a reply (`send --wait`,
`harness chat`, the chat's failure notice), who otherwise would see only "the run failed".
"""

from __future__ import annotations

import re
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


MODEL_VARIABLE = "AGENT_MODEL"
_KEY_REFUSED = "the model provider refused the API key ({status} {kind}): check {key}"
_NO_ACCESS = (
    "the model provider refused this API key access ({status} {kind}): check {key} and what "
    "its account may use"
)
_QUOTA_SPENT = (
    "the model provider says the account's quota or credit is used up ({status} {kind}): "
    "add credit or raise the limit of the account of {key}"
)
_UNKNOWN_MODEL = "the model provider does not know the model ({status} {kind}): check {key}"
_TEMPLATES = (_KEY_REFUSED, _NO_ACCESS, _QUOTA_SPENT, _UNKNOWN_MODEL)
_KIND = re.compile(r"[a-z0-9_]{1,40}")
_QUOTA_KINDS = frozenset({"insufficient_quota", "billing_error"})
_QUOTA_HINTS = ("credit balance is too low", "exceeded your current quota")


def refusal_reason(status: int | None, kind: str, detail: str, key_variable: str) -> str | None:
    """The sentence a person can act on for a provider's refusal that no retry fixes: a
    refused key (401), no access (403), a spent quota or credit (402 `billing_error`, 429
    `insufficient_quota`, a 400 saying the credit balance is too low) or an unknown model
    (404). None for anything else. `kind` is the provider's error type or code, `detail` its
    message (only searched, never copied), `key_variable` the setting holding the key
    (`ANTHROPIC_API_KEY`). Holds no secret: fixed words, digits and names."""
    if status is None:
        return None
    kind = kind if _KIND.fullmatch(kind) else "error"
    lowered = detail.lower()
    if kind in _QUOTA_KINDS or status == 402 or any(hint in lowered for hint in _QUOTA_HINTS):
        template = _QUOTA_SPENT
    elif status == 401:
        template = _KEY_REFUSED
    elif status == 403:
        template = _NO_ACCESS
    elif status == 404:
        template, key_variable = _UNKNOWN_MODEL, MODEL_VARIABLE
    else:
        return None
    return template.format(status=status, kind=kind, key=key_variable)


def _pattern(template: str) -> str:
    fields = {"status": r"\d{3}", "kind": _KIND.pattern, "key": r"[A-Z][A-Z0-9_]{0,63}"}
    pieces = re.split(r"\{(\w+)\}", template)
    return "".join(fields[p] if i % 2 else re.escape(p) for i, p in enumerate(pieces))


_REASON = re.compile("|".join(f"(?:{_pattern(t)})" for t in _TEMPLATES))


def failure_reason(error: str) -> str | None:
    """The `refusal_reason` sentence inside a failed run's error text, alone, or None. Only
    text matching one of those sentences comes out, so nothing else of the error (which may
    quote the conversation) reaches whoever is shown it."""
    found = _REASON.search(error)
    return found.group(0) if found else None


def permanent_error(
    text: str, provider: str, status: int | None, kind: str, detail: str, key_variable: str
) -> PermanentModelError:
    """The `PermanentModelError` for a provider's refusal: `text` (status, type, message,
    already without the key), led by its `refusal_reason` when it has one."""
    reason = refusal_reason(status, kind, detail, key_variable)
    message = f"{reason}; {text}" if reason else text
    return PermanentModelError(message, provider=provider, status_code=status)
