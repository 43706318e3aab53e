"""How every `harness` command prints data: `--json` for machines, a table on a terminal,
plain aligned columns in a pipe. One place decides each:

    emit_json(value)              `--json`: indented JSON on stdout, keys as documented
    print_rows(header, rows, 1)   a rich table on a terminal; else full values, space-aligned
    on_terminal()                 whether stdout is a terminal (TTY_COMPATIBLE=1 forces it)

Piped output never cuts a value, never draws boxes and never wraps a cell: a cell's line
breaks become "; ", so one row stays one line for grep and awk. Errors never go here: they
are one line on stderr (`one_line_errors`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]


def on_terminal() -> bool:
    """True when stdout is a terminal a person reads (rich's rule: TTY_COMPATIBLE=1 forces it)."""
    return Console().is_terminal


def plain(value: Any) -> Any:
    """`value` as JSON-ready data: pydantic models dumped in JSON mode, dataclasses as dicts,
    tuples as lists, recursively. Other values are returned unchanged."""
    from pydantic import BaseModel  # here: `harness --help` has no other use for pydantic

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def emit_json(value: Any) -> None:
    """Print `value` (see `plain`) as indented JSON on stdout, non-ASCII kept as is."""
    typer.echo(json.dumps(plain(value), indent=2, ensure_ascii=False, default=str))


def print_rows(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    no_wrap: int = 0,
    title: str = "",
) -> None:
    """A table on a terminal (columns up to `no_wrap` are never cut or wrapped); aligned plain
    columns otherwise, so piped output keeps every value whole. `title`, when given, is the
    table's title (a line of its own when piped)."""
    if on_terminal():
        table = Table(*header, title=title or None, title_justify="left")
        for index, column in enumerate(table.columns):
            if index < no_wrap:
                column.no_wrap = True
                column.overflow = "fold"
                column.min_width = max(len(row[index]) for row in rows) if rows else None
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        Console().print(table)
        return
    if title:
        typer.echo(f"{title}:")
    flat = [["; ".join(part for part in cell.splitlines() if part) for cell in row] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(header, *flat, strict=True)]
    for row in (list(header), *flat):
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        typer.echo(line.rstrip())
