"""Bounded, redacted previews of what a step took and returned.

A preview is for a person reading a run (`harness runs show`, the dashboard), never for
replay: replay reads the step's full value. What a step was given is previewed when it is
recorded (`step_preview`, kept in the journal entry); what it returned is previewed when it
is read (`output_preview`), from the value the entry keeps anyway. `preview(value)` walks
the value only as far as its budget allows, so a long conversation costs what a short one
does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring as quote
from typing import Any

from harness.redaction import redact

PREVIEW_CHARS = 400
# What a step was given is previewed on every step, as it runs: half as long (bench.records:
# a step's recording cost grows with it); outputs and triggers are previewed when read.
INPUT_PREVIEW_CHARS = 200
# ASCII markers: text that stays ASCII is lower-cased and searched several times faster by
# the redaction that follows, and is stored and sent as is.
_ELLIPSIS = "..."


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """At most `limit` characters of JSON-like text for `value`, secrets redacted. Lists show
    their last items first when they would not fit (the newest message of a conversation is
    the interesting one). Never raises."""
    parts: list[str] = []
    try:
        _walk(value, parts, limit + 40)  # slack: a secret cut at the limit still matches
    except Exception:  # a preview must never fail the step it describes
        parts = [repr(type(value))]
    text = redact("".join(parts))
    return text if len(text) <= limit else text[: limit - len(_ELLIPSIS)] + _ELLIPSIS


def _scalar(value: bool | int | float | None) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return repr(value)  # int and float as JSON writes them (NaN and Infinity by name)


_SEQUENCES = (list, tuple)
_SCALARS = (bool, int, float)


def _walk(value: Any, out: list[str], budget: int) -> int:
    """Append `value`'s text to `out`, stopping once `budget` characters are spent; returns
    what is left of the budget. `quote` (the json module's C string encoder) rather than
    `json.dumps`, which builds an encoder per call: a preview is taken on every step."""
    if budget <= 0:
        return budget
    kind = type(value)
    if kind is str:
        text = quote(value[:budget])
        out.append(text)
        return budget - len(text)
    if kind is dict:
        out.append("{")
        lead = ""
        for key, item in value.items():
            if budget <= 0:
                out.append(_ELLIPSIS)
                break
            name = quote(key if type(key) is str else str(key))
            budget -= len(name) + 1
            if type(item) is str and budget > 0:  # the common leaf, without a call
                text = quote(item[:budget])
                out.append(lead + name + ":" + text)
                budget -= len(text)
            else:
                out.append(lead + name + ":")
                budget = _walk(item, out, budget)
            lead = ","
        out.append("}")
        return budget
    if kind in _SEQUENCES:
        items = value
        if len(items) > 3:
            out.append(f"[...{len(items) - 2} more,")
            items = items[-2:]
        else:
            out.append("[")
        lead = ""
        for item in items:
            if lead:
                out.append(lead)
            if type(item) is int and budget > 0:  # the common leaf, without a call
                text = repr(item)
                out.append(text)
                budget -= len(text)
            else:
                budget = _walk(item, out, budget)
            lead = ","
        out.append("]")
        return budget
    if value is None or kind in _SCALARS:
        text = _scalar(value)
        out.append(text)
        return budget - len(text)
    if isinstance(value, str | dict | list | tuple | bool | int | float):  # subclasses
        return _walk(json.loads(json.dumps(value)), out, budget)
    if hasattr(value, "model_dump"):
        return _walk(value.model_dump(mode="json", exclude_defaults=True), out, budget)
    text = _object_text(value)[:budget]
    out.append(text)
    return budget - len(text)


def _object_text(value: Any) -> str:
    """A value that is not data: its own `str` where its class has one (a path, a date, an
    enum), else `<TypeName>`. A class without one would print its `repr`, which for a step
    handed the runtime walks every registered function (about a millisecond, on every step)
    and tells a reader nothing."""
    kind = type(value)
    if not any("__str__" in vars(base) for base in kind.__mro__[:-1]):  # all but `object`
        return f"<{kind.__name__}>"
    return str(value)


def event_preview(event: Mapping[str, Any]) -> str:
    """What triggered a run, for people: `<name>  <preview of its data>`, bounded by
    `PREVIEW_CHARS` and redacted like every preview. Never raises."""
    name = str(event.get("name", "")) if isinstance(event, Mapping) else ""
    data = event.get("data") if isinstance(event, Mapping) else event
    return f"{name}  {preview(data, PREVIEW_CHARS - len(name) - 2)}".strip()


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
    args: tuple[Any, ...], kwargs: dict[str, Any], usage: dict[str, Any] | None
) -> str:
    """The journal fields a completed step adds for people: `,"i":…` (what it was given,
    bounded by `INPUT_PREVIEW_CHARS`) and, for a model's answer, `,"u":{…}`. Never raises.

    There is no output preview: the step's value is in the record already (`v`, for replay),
    so a reader previews it (`output_preview`) instead of every step writing a second copy."""
    given: Any
    if kwargs:
        given = [*args, kwargs] if args else kwargs
    else:
        given = args[0] if len(args) == 1 else list(args)
    text = ',"i":' + quote(preview(given, INPUT_PREVIEW_CHARS))
    if usage is not None:
        text += ',"u":' + json.dumps(usage, separators=(",", ":"))
    return text


def output_preview(entry: Mapping[str, Any]) -> str:
    """The bounded, redacted preview of what a journal entry's step returned: its `o` field
    (records written before outputs were previewed on reading), else a preview of its value;
    "" for a step without one. Never raises."""
    if "o" in entry:
        return str(entry["o"])
    return preview(entry["v"]) if "v" in entry else ""
