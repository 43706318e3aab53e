"""Secrets out of everything we write: step previews, errors, run records and log lines.

`redact(text)` replaces well-known credential shapes (Anthropic and OpenAI keys, Slack and
Telegram tokens, GitHub and AWS keys, `Bearer ...`, `password=...`) and every value
registered with `register_secret` (the settings marked secret register theirs) with
`[REDACTED]`. It is pure, never raises, and cheap on text with no secret in it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable

MASK = "[REDACTED]"
_MIN_SECRET_CHARS = 6


def _digit_before_colon(lowered: str) -> bool:
    """True when some ':' follows a digit: what every Telegram token has. Much cheaper than
    the token pattern on JSON text, where ':' alone is everywhere."""
    at = lowered.find(":")
    while at > 0:
        if lowered[at - 1].isdigit():
            return True
        at = lowered.find(":", at + 1)
    return False


# (a lower-case literal every match contains, or a cheap test every match passes; the
# pattern): a pattern runs only on text that passes its guard, so text without any secret
# costs a few substring checks.
_GUARDED: tuple[tuple[str | Callable[[str], bool], re.Pattern[str]], ...] = tuple(
    (guard, re.compile(pattern))
    for guard, pattern in (
        ("sk-", r"sk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_\-]{16,}"),  # Anthropic, OpenAI
        ("xox", r"xox[abposr]-[A-Za-z0-9\-]{8,}"),  # Slack bot / user tokens
        ("xapp-", r"xapp-[A-Za-z0-9\-]{8,}"),  # Slack app-level tokens
        (_digit_before_colon, r"\b\d{6,12}:[A-Za-z0-9_\-]{30,}"),  # Telegram bot tokens
        ("_", r"gh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
        ("akia", r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
        ("bearer", r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*"),
        ("pass", r"(?i:(?:password|passwd)\s*[=:]\s*)[^\s'\",;&]{6,}"),
        ("secret", r"(?i:secret\s*[=:]\s*)[^\s'\",;&]{6,}"),
        ("key", r"(?i:api[_-]?key\s*[=:]\s*)[^\s'\",;&]{6,}"),
        ("token", r"(?i:token\s*[=:]\s*)[^\s'\",;&]{6,}"),
    )
)

_BY_LITERAL = tuple((g, p) for g, p in _GUARDED if isinstance(g, str))
_BY_TEST = tuple((g, p) for g, p in _GUARDED if not isinstance(g, str))

_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
_literal: re.Pattern[str] | None = None


def register_secret(*values: str | None) -> None:
    """Treat each value (six characters or more) as a secret from now on, in this process.
    Idempotent; shorter or empty values are ignored (they would mask ordinary words)."""
    global _secrets, _literal
    fresh = {v for v in values if v and len(v) >= _MIN_SECRET_CHARS}
    with _lock:
        if fresh <= _secrets:
            return
        _secrets = _secrets | fresh
        ordered = sorted(_secrets, key=len, reverse=True)
        _literal = re.compile("|".join(re.escape(v) for v in ordered))


def register_secrets(values: Iterable[str | None]) -> None:
    """`register_secret` for each of `values`."""
    register_secret(*values)


def redact(text: str) -> str:
    """`text` with every known secret replaced by `[REDACTED]`. Never raises."""
    if not text:
        return text
    literal = _literal
    if literal is not None:
        text = literal.sub(MASK, text)
    lowered = text.lower()
    for guard, pattern in _BY_LITERAL:
        if guard in lowered:
            text = pattern.sub(_mask_match, text)
    for test, pattern in _BY_TEST:
        if test(lowered):
            text = pattern.sub(_mask_match, text)
    return text


def _mask_match(match: re.Match[str]) -> str:
    found = match.group(0)
    for lead in ("=", ":"):
        head, sep, _ = found.partition(lead)
        if sep and not head.strip().isdigit() and len(head) < 20:
            return head + sep + MASK
    if found[:6].lower() == "bearer":
        return "Bearer " + MASK
    return MASK
