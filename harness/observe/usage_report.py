"""`harness usage` and the dashboard's chart: token totals grouped by day, session or model,
with list-price cost (None, shown "unknown", when any model in a group has no price)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from harness.llm.pricing import known_cost_usd
from harness.llm.types import Usage
from harness.records.usage import UsageRow

GroupBy = Literal["day", "session", "model"]


class UsageTotal(BaseModel):
    """Tokens and cost of one group (a day, a session or a model)."""

    group: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0


def _cost(row: UsageRow) -> float | None:
    usage = Usage(
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cache_read_tokens=row.cache_read_tokens,
        cache_write_tokens=row.cache_write_tokens,
    )
    return known_cost_usd(row.model, usage)


def totals(rows: Sequence[UsageRow], by: GroupBy) -> list[UsageTotal]:
    """`rows` summed per `by` group, in group order (days oldest first)."""
    groups: dict[str, UsageTotal] = {}
    for row in rows:
        name = {"day": row.day, "session": row.session or "(none)", "model": row.model}[by]
        total = groups.setdefault(name, UsageTotal(group=name))
        total.calls += row.calls
        total.input_tokens += row.input_tokens
        total.output_tokens += row.output_tokens
        total.cache_read_tokens += row.cache_read_tokens
        total.cache_write_tokens += row.cache_write_tokens
        cost = _cost(row)
        total.cost_usd = None if cost is None or total.cost_usd is None else total.cost_usd + cost
    return [groups[name] for name in sorted(groups)]
