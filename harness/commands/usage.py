"""`harness usage`: tokens and list-price cost per day, per session or per model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from harness.commands.output import JsonOption, emit_json, print_rows
from harness.observe.step_details import money
from harness.observe.usage_report import GroupBy, totals
from harness.records.stores import redis_records
from harness.runtime import get_runtime


def usage(
    days: Annotated[int, typer.Option(help="How many UTC days back, today included.")] = 7,
    by: Annotated[str, typer.Option(help="Group by day, session or model.")] = "day",
    as_json: JsonOption = False,
) -> None:
    """Tokens and cost per day (or --by session / model). Cost is "unknown" when a model has
    no price (add one with MODEL_PRICES)."""
    if by not in ("day", "session", "model"):
        raise typer.BadParameter("--by must be day, session or model")
    group: GroupBy = by  # type: ignore[assignment]
    rt = get_runtime()
    today = datetime.fromtimestamp(rt.clock(), UTC).date()
    rows = redis_records(rt).usage.rows(today - timedelta(days=max(days, 1) - 1), today)
    result = totals(rows, group)
    if as_json:
        emit_json(result)
        return
    table = [
        [
            t.group, str(t.calls), str(t.input_tokens), str(t.cache_read_tokens),
            str(t.cache_write_tokens), str(t.output_tokens), money(t.cost_usd),
        ]
        for t in result
    ]  # fmt: skip
    print_rows([by, "calls", "input", "cache read", "cache write", "output", "cost"], table, 1)
