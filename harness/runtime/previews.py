"""Bounded, redacted previews of what a step took and returned, kept in its journal record.

A preview is for a person reading a run (`harness runs show`, the dashboard), never for
replay: replay reads the step's full value. `preview(value)` walks the value only as far as
its budget allows, so a think step's long conversation costs the same as a short one.
"""

from __future__ import annotations

import json
from typing import Any

from harness.redaction import redact

PREVIEW_CHARS = 400
_ELLIPSIS = "…"


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """At most `limit` characters of JSON-like text for `value`, secrets redacted. Lists show
    their last items first when they would not fit (the newest message of a conversation is
    the interesting one). Never raises."""
    parts: list[str] = []
    try:
        _walk(value, parts, [limit + 40])
    except Exception:  # a preview must never fail the step it describes
        parts = [repr(type(value))]
    text = redact("".join(parts))
    return text if len(text) <= limit else text[: limit - 1] + _ELLIPSIS


def _walk(value: Any, out: list[str], budget: list[int]) -> None:
    if budget[0] <= 0:
        return
    if isinstance(value, str):
        text = json.dumps(value[: budget[0]], ensure_ascii=False)
        out.append(text)
        budget[0] -= len(text)
    elif isinstance(value, dict):
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if budget[0] <= 0:
                out.append(_ELLIPSIS)
                break
            out.append(("," if index else "") + json.dumps(str(key)) + ":")
            budget[0] -= len(str(key)) + 3
            _walk(item, out, budget)
        out.append("}")
    elif isinstance(value, list | tuple):
        items = list(value)
        out.append("[")
        if len(items) > 3:
            out.append(f"…{len(items) - 2} more,")
            items = items[-2:]
        for index, item in enumerate(items):
            if index:
                out.append(",")
            _walk(item, out, budget)
        out.append("]")
    elif value is None or isinstance(value, bool | int | float):
        text = json.dumps(value)
        out.append(text)
        budget[0] -= len(text)
    elif hasattr(value, "model_dump"):
        _walk(value.model_dump(mode="json", exclude_defaults=True), out, budget)
    else:
        text = str(value)[: budget[0]]
        out.append(text)
        budget[0] -= len(text)


def usage_of(value: Any) -> dict[str, Any] | None:
    """A model step's usage as `{"model", "in", "out", "cr", "cw"}`, when `value` looks like a
    model's answer (a dict with `model` and a `usage` of token counts); None otherwise."""
    if not isinstance(value, dict):
        return None
    usage, model = value.get("usage"), value.get("model")
    if not isinstance(usage, dict) or not isinstance(model, str):
        return None
    return {
        "model": model,
        "in": int(usage.get("input_tokens", 0) or 0),
        "out": int(usage.get("output_tokens", 0) or 0),
        "cr": int(usage.get("cache_read_tokens", 0) or 0),
        "cw": int(usage.get("cache_write_tokens", 0) or 0),
    }


def step_preview(
    args: tuple[Any, ...], kwargs: dict[str, Any], value: Any, usage: dict[str, Any] | None
) -> str:
    """The journal fields a completed step adds for people: `,"i":…,"o":…` and, for a model's
    answer, `,"u":{…}`. Each preview is bounded by `PREVIEW_CHARS`. Never raises."""
    given: Any = list(args) if not kwargs else [*args, kwargs]
    if len(given) == 1:
        given = given[0]
    text = ',"i":' + json.dumps(preview(given)) + ',"o":' + json.dumps(preview(value))
    if usage is not None:
        text += ',"u":' + json.dumps(usage, separators=(",", ":"))
    return text
