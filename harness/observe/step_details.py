"""What a person sees of one step beyond its timing: previews, error, tokens and cost.

Reads the fields `Step.run` writes to a journal entry (`i` input preview, `e` error, `tb`
its traceback, `u` usage) and previews the step's value (`v`) as its output. Every text is
redacted again here, when it is shown, though the recording process redacted the previews and
the error too: an old record, or one written by a process that did not know a secret, shows
no more. Cost comes from the price table now, so an unpriced model shows None ("unknown").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from harness.llm.pricing import known_cost_usd
from harness.llm.types import Usage
from harness.redaction import redact
from harness.runtime.previews import output_preview


class ModelUsage(BaseModel, frozen=True):
    """Tokens of one model call and its list-price cost (None: the model has no price)."""

    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


class StepDetail(BaseModel, frozen=True):
    """A step's bounded input and output previews, its error with its traceback (recorded
    since the traceback was kept; "" before) and, for model steps, usage."""

    key: str
    input: str = ""
    output: str = ""
    error: str = ""
    traceback: str = ""
    usage: ModelUsage | None = None


def model_usage(raw: Mapping[str, Any]) -> ModelUsage:
    """A `ModelUsage` from a journal `u` field or a usage row (`{"model", "in", ...}`)."""
    usage = Usage(
        input_tokens=int(raw.get("in", 0)),
        output_tokens=int(raw.get("out", 0)),
        cache_read_tokens=int(raw.get("cr", 0)),
        cache_write_tokens=int(raw.get("cw", 0)),
    )
    model = str(raw.get("model", ""))
    return ModelUsage(model=model, **usage.model_dump(), cost_usd=known_cost_usd(model, usage))


def step_detail(key: str, entry: Mapping[str, Any]) -> StepDetail:
    """The detail of journal entry `entry` recorded under `key`, its texts redacted. Never
    raises on old entries (written before previews existed): their fields are simply empty."""
    raw_usage = entry.get("u")
    return StepDetail(
        key=key,
        input=redact(str(entry.get("i", ""))),
        output=redact(output_preview(entry)),
        error=redact(str(entry.get("e", ""))),
        traceback=redact(str(entry.get("tb", ""))),
        usage=model_usage(raw_usage) if isinstance(raw_usage, Mapping) else None,
    )


def run_cost(details: list[StepDetail]) -> tuple[int, float | None]:
    """Total tokens of a run's model steps and their cost; the cost is None when any model
    step's model has no price (a partial sum would read as the whole)."""
    tokens, cost, unknown = 0, 0.0, False
    for detail in details:
        if detail.usage is None:
            continue
        u = detail.usage
        tokens += u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens
        if u.cost_usd is None:
            unknown = True
        else:
            cost += u.cost_usd
    return tokens, None if unknown else cost


def money(cost: float | None) -> str:
    """`$0.0123` or `unknown`."""
    return "unknown" if cost is None else f"${cost:.4f}"
