"""Text from outside, made safe to store and send: lone UTF-16 surrogates (`"x\\ud800y"`, which
JSON allows and UTF-8 cannot encode) become U+FFFD, so a turn never fails on them later."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD; anything else is unchanged."""
    return _LONE_SURROGATE.sub(REPLACEMENT, text)


def clean_json(value: Any) -> Any:
    """A parsed JSON value with `clean_text` applied to every string, keys included."""
    return map_json_strings(value, clean_text)


def map_json_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A copy of JSON data `value` with `change` applied to every string, keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(str(k)): map_json_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [map_json_strings(item, change) for item in value]
    return value
