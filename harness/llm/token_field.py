"""Which request field carries the output-token limit for an OpenAI-compatible server.

The official API wants `max_completion_tokens` (and refuses `max_tokens` for reasoning
models); Ollama ignores `max_completion_tokens` and most other local servers know only
`max_tokens`, some answering 400 to a field they do not know. So the default depends on the
base URL, the `OPENAI_MAX_TOKENS_FIELD` setting overrides it, and a 400 that names the field
we sent switches to the other one once; the switch is remembered per base URL for the life
of the process, so only the first call to a server pays for the extra round trip.
"""

from __future__ import annotations

import threading
from typing import Literal
from urllib.parse import urlsplit

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
MAX_TOKENS_FIELDS: tuple[MaxTokensField, ...] = ("max_completion_tokens", "max_tokens")
_OFFICIAL_HOSTS = frozenset({"api.openai.com"})
_UNKNOWN_FIELD_HINTS = (
    "unrecognized",
    "unsupported",
    "unknown",
    "not supported",
    "extra inputs",
    "not permitted",
    "unexpected",
)
_lock = threading.Lock()
_learned: dict[str, MaxTokensField] = {}


def default_field(base_url: str) -> MaxTokensField:
    """`max_completion_tokens` for the official API, `max_tokens` for any other server."""
    host = (urlsplit(base_url).hostname or "").lower()
    return "max_completion_tokens" if host in _OFFICIAL_HOSTS else "max_tokens"


class TokenField:
    """The field to send to one base URL. Thread-safe; never raises."""

    def __init__(self, base_url: str, configured: MaxTokensField | None = None) -> None:
        self._key = base_url.rstrip("/")
        self._configured = configured or default_field(base_url)

    def current(self) -> MaxTokensField:
        """The field to send now: a learned fallback, else the setting, else the default."""
        with _lock:
            return _learned.get(self._key, self._configured)

    def fall_back(self, sent: MaxTokensField, message: str, param: str | None) -> bool:
        """Switch to the other field if the server's 400 (`message`, and the error's `param`
        when it has one) is about `sent`. Returns True when the caller should retry once."""
        about_field = param == sent or sent in message
        if not about_field or not any(h in message.lower() for h in _UNKNOWN_FIELD_HINTS):
            return False
        other: MaxTokensField = (
            "max_tokens" if sent == "max_completion_tokens" else "max_completion_tokens"
        )
        with _lock:
            if _learned.get(self._key, self._configured) != sent:
                return True  # another thread already switched: retry with its choice
            _learned[self._key] = other
        return True


def forget_learned() -> None:
    """Drop every remembered fallback. For tests."""
    with _lock:
        _learned.clear()
