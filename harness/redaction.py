"""Secrets out of everything we write: step previews, errors, run records and log lines.

`redact(text)` replaces well-known credential shapes (a URL's password, Anthropic and OpenAI
keys, Slack and Telegram tokens, GitHub and AWS keys, `Bearer ...`, `password=...`) and every
value registered with `register_secret` (`harness.credentials` registers every configured
credential) with `[REDACTED]`; `redact_registered(text)` masks the registered values only.
It is pure, never raises, and cheap on text with no secret in it: a shape's pattern runs
only on text that passes a test every match of that shape passes, and the tests start with
one-character searches (a memchr, about ten times cheaper than searching for a longer
literal) that rule out several shapes at once.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import AfterValidator

from harness.text import map_json_strings

MASK = "[REDACTED]"
_MIN_SECRET_CHARS = 6

# The credential shapes, in the order `redact` applies them.
SHAPES: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in (
        ("url-password", r"://[^\s/@:]*:[^\s/@]+@"),  # redis://user:password@host
        ("openai", r"sk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_\-]{16,}"),  # Anthropic, OpenAI
        ("slack", r"xox[abposr]-[A-Za-z0-9\-]{8,}"),  # Slack bot / user tokens
        ("slack-app", r"xapp-[A-Za-z0-9\-]{8,}"),  # Slack app-level tokens
        ("github", r"gh[pousr]_[A-Za-z0-9]{20,}"),
        ("aws", r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
        ("bearer", r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*"),
        ("password", r"(?i:(?:password|passwd)\s*[=:]\s*)[^\s'\",;&]{6,}"),
        ("secret", r"(?i:secret\s*[=:]\s*)[^\s'\",;&]{6,}"),
        ("api-key", r"(?i:api[_-]?key\s*[=:]\s*)[^\s'\",;&]{6,}"),
        ("token", r"(?i:token\s*[=:]\s*)[^\s'\",;&]{6,}"),
        ("telegram", r"\b\d{6,12}:[A-Za-z0-9_\-]{30,}"),  # Telegram bot tokens
    )
}
_URL_PASSWORD, _OPENAI, _SLACK, _SLACK_APP, _GITHUB, _AWS, _BEARER = (
    SHAPES[name]
    for name in ("url-password", "openai", "slack", "slack-app", "github", "aws", "bearer")
)
_NAMED = tuple(
    (literal, SHAPES[name])
    for literal, name in (
        ("pass", "password"), ("secret", "secret"), ("key", "api-key"), ("token", "token")
    )
)  # fmt: skip
_TELEGRAM = SHAPES["telegram"]
# How every name the `name=value` patterns match ends (`api[_-]?key` ends in "key").
_NAMES = ("password", "passwd", "secret", "key", "token")

# The characters a credential is made of: what follows a registered value in the same token.
_TOKEN_TAIL = r"[A-Za-z0-9_\-.~+/=]*"

_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
# The registered values, longest first, and one pattern matching any of them; None until a
# value is registered. One tuple, so a reader sees both from the same registration.
_literal: tuple[tuple[str, ...], re.Pattern[str]] | None = None


def register_secret(*values: str | None) -> None:
    """Treat each value (six characters or more) as a secret from now on, in this process:
    `redact` masks it and the rest of the token it starts or sits in. Idempotent; shorter or
    empty values are ignored (they would mask ordinary words)."""
    global _secrets, _literal
    fresh = {v for v in values if v and len(v) >= _MIN_SECRET_CHARS}
    with _lock:
        if fresh <= _secrets:
            return
        _secrets = _secrets | fresh
        ordered = tuple(sorted(_secrets, key=len, reverse=True))
        # The mask takes the rest of the token a value sits in: a registered value that is
        # the start of a longer credential ("xoxb-1" of "xoxb-123...") would otherwise leave
        # the credential's tail unmasked and no longer in any shape.
        alternation = "|".join(re.escape(v) for v in ordered)
        _literal = (ordered, re.compile(f"(?:{alternation}){_TOKEN_TAIL}"))


def register_secrets(values: Iterable[str | None]) -> None:
    """`register_secret` for each of `values`."""
    register_secret(*values)


def redact(text: str) -> str:
    """`text` with every known secret replaced by `[REDACTED]`. Never raises.

    The same as running every pattern of `SHAPES` in order (after the registered values):
    each guard below is true for every text its patterns can match."""
    if len(text) < _MIN_SECRET_CHARS:  # shorter than any secret: nothing to find
        return text
    text = redact_registered(text)
    if "://" in text and "@" in text:
        text = _URL_PASSWORD.sub(_mask_match, text)
    if "-" in text:  # every key below has one after its prefix
        if "sk-" in text:
            text = _OPENAI.sub(_mask_match, text)
        if "xox" in text:
            text = _SLACK.sub(_mask_match, text)
        if "xapp-" in text:
            text = _SLACK_APP.sub(_mask_match, text)
    if "_" in text and "gh" in text:
        text = _GITHUB.sub(_mask_match, text)
    if "K" in text and "AKIA" in text:
        text = _AWS.sub(_mask_match, text)
    lowered = text.lower()
    if "bearer" in lowered:
        text = _BEARER.sub(_mask_match, text)
    if _named_value(text):
        for name, pattern in _NAMED:
            if name in lowered:
                text = pattern.sub(_mask_match, text)
        if _digit_before_colon(text):
            text = _TELEGRAM.sub(_mask_match, text)
    return text


def redact_registered(text: str) -> str:
    """`text` with every registered value (and the rest of the token it sits in) replaced by
    `[REDACTED]`, and nothing else: for text that must stay the agent's own (a tool's output,
    where a shape-like string such as `token=abc123` in a test file is data, not a secret).
    Never raises."""
    literal = _literal
    # A substring search per value is several times cheaper than the alternation's scan,
    # which then runs only on text that holds one.
    if literal is not None and any(value in text for value in literal[0]):
        return literal[1].sub(MASK, text)
    return text


RedactedText = Annotated[str, AfterValidator(redact)]
"""A model's text field that is redacted whenever the model is built or read back: for text
recorded for people (an error) that no code reads back for its value."""


def redact_json(value: Any) -> Any:
    """`value` (JSON data) with every string in it, keys included, passed through `redact`.
    Never raises."""
    return map_json_strings(value, redact)


def _named_value(text: str) -> bool:
    """True when some '=' or ':' in `text` follows, past any whitespace, a digit or the end
    of a name the `name=value` patterns and the Telegram pattern look for. Their ':' never
    follows '"', so the colons that end JSON keys are skipped (all at once by the counts)."""
    if "=" not in text and text.count(":") <= text.count('":'):
        return False
    for sep in ("=", ":"):
        at = text.find(sep)
        while at >= 0:
            if at and (sep == "=" or text[at - 1] != '"'):
                start = max(0, at - 32)
                head = text[start:at].rstrip()
                if len(head) < 8 and start:  # whitespace ran past the window: assume a name
                    return True
                if head and (head[-1].isdigit() or head.casefold().endswith(_NAMES)):
                    return True
            at = text.find(sep, at + 1)
    return False


def _digit_before_colon(text: str) -> bool:
    """True when some ':' follows a digit: what every Telegram token has. Much cheaper than
    the token pattern on JSON text, where ':' alone is everywhere."""
    at = text.find(":")
    while at >= 0:
        if at and text[at - 1].isdigit():
            return True
        at = text.find(":", at + 1)
    return False


def _mask_match(match: re.Match[str]) -> str:
    found = match.group(0)
    if found.startswith("://"):  # a URL's user stays, its password goes
        return found[: found.index(":", 3) + 1] + MASK + "@"
    for lead in ("=", ":"):
        head, sep, _ = found.partition(lead)
        if sep and not head.strip().isdigit() and len(head) < 20:
            return head + sep + MASK
    if found[:6].lower() == "bearer":
        return "Bearer " + MASK
    return MASK
