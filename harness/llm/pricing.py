"""What a call cost, from a small table of list prices in USD per million tokens.

The table is an estimate for budgets and dashboards, not an invoice: it ignores batch
discounts, regional surcharges and long-context tiers. Models missing from it cost 0.0 in
`cost_usd` (a provider's running total); `known_cost_usd` says None ("unknown") instead, and
is what records and reports use. `MODEL_PRICES` adds or overrides entries (`price_overrides`).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.llm.types import Usage


@dataclass(frozen=True)
class Price:
    """USD per million tokens for each kind of token in `Usage`, and where the figures came
    from and when they were checked."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0
    source: str = ""
    as_of: str = ""


_CHECKED = "2026-11-30"


def _anthropic(i: float, o: float, cr: float, cw: float) -> Price:
    return Price(i, o, cr, cw, source="anthropic.com/pricing", as_of=_CHECKED)


def _openai(i: float, o: float, cr: float) -> Price:
    return Price(i, o, cr, 0.0, source="openai.com/api/pricing", as_of=_CHECKED)


# Checked against the providers' published price pages; update when they change.
PRICES: dict[str, Price] = {
    "claude-opus-5-5": _anthropic(4.00, 20.00, 0.20, 5.00),
    "claude-sonnet-5-5": _anthropic(2.00, 10.00, 0.20, 2.50),
    "claude-haiku-5-5": _anthropic(0.10, 0.50, 0.01, 0.125),
    "claude-opus-5": _anthropic(5.00, 25.00, 0.50, 6.25),
    "claude-sonnet-5": _anthropic(2.00, 10.00, 0.20, 2.50),
    "claude-haiku-4-5": _anthropic(1.00, 5.00, 0.10, 1.25),
    "gpt-5.5": _openai(5.00, 30.00, 0.50),
    "gpt-5.4": _openai(2.50, 15.00, 0.25),
    "gpt-5.4-mini": _openai(0.75, 4.50, 0.075),
}


OVERRIDES: dict[str, Price] = {}
"""Prices from `MODEL_PRICES`, consulted before `PRICES` (set by `price_overrides.apply`)."""


def price_for(model: str) -> Price | None:
    """The price of `model`, matching dated snapshots (`gpt-5.4-mini-2026-03-17`) by the
    longest known prefix, overrides first; None for unknown models."""
    for table in (OVERRIDES, PRICES):
        if model in table:
            return table[model]
    for table in (OVERRIDES, PRICES):
        matches = [name for name in table if model.startswith(name + "-")]
        if matches:
            return table[max(matches, key=len)]
    return None


def known_cost_usd(model: str, usage: Usage) -> float | None:
    """The list-price cost of `usage` on `model` in USD; None when the model has no price."""
    return cost_usd(model, usage) if price_for(model) is not None else None


def cost_usd(model: str, usage: Usage) -> float:
    """The list-price cost of `usage` on `model` in USD; 0.0 for unknown models. Never raises."""
    price = price_for(model)
    if price is None:
        return 0.0
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    )
    return total / 1_000_000
