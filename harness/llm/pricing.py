"""What a call cost, from a small table of list prices in USD per million tokens.

The table is an estimate for budgets and dashboards, not an invoice: it ignores batch
discounts, regional surcharges and long-context tiers. Models missing from it cost 0.0.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.llm.types import Usage


@dataclass(frozen=True)
class Price:
    """USD per million tokens for each kind of token in `Usage`."""

    input: float
    output: float
    cache_read: float
    cache_write: float


# Checked against the providers' published price pages; update when they change.
PRICES: dict[str, Price] = {
    "claude-opus-5-5": Price(input=4.00, output=20.00, cache_read=0.20, cache_write=5.00),
    "claude-sonnet-5-5": Price(input=2.00, output=10.00, cache_read=0.20, cache_write=2.50),
    "claude-haiku-5-5": Price(input=0.10, output=0.50, cache_read=0.01, cache_write=0.125),
    "claude-opus-5": Price(input=5.00, output=25.00, cache_read=0.50, cache_write=6.25),
    "claude-sonnet-5": Price(input=2.00, output=10.00, cache_read=0.20, cache_write=2.50),
    "claude-haiku-4-5": Price(input=1.00, output=5.00, cache_read=0.10, cache_write=1.25),
    "gpt-5.5": Price(input=5.00, output=30.00, cache_read=0.50, cache_write=0.0),
    "gpt-5.4": Price(input=2.50, output=15.00, cache_read=0.25, cache_write=0.0),
    "gpt-5.4-mini": Price(input=0.75, output=4.50, cache_read=0.075, cache_write=0.0),
}


def price_for(model: str) -> Price | None:
    """The price of `model`, matching dated snapshots (`gpt-5.4-mini-2026-03-17`) by the
    longest known prefix; None for unknown models."""
    if model in PRICES:
        return PRICES[model]
    matches = [name for name in PRICES if model.startswith(name + "-")]
    return PRICES[max(matches, key=len)] if matches else None


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
