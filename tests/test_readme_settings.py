"""README's configuration table, as a Markdown renderer reads it (issue 32: a blank line inside
it ended the table, and about 40 rows rendered as raw `|` text): every row of the
"## Configuration" section is inside a table, and every setting of `Settings` (engine, model
and sidecar ones included) has a row there."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from harness.settings import Settings

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## Configuration"


def _section() -> tuple[list[str], list[Token]]:
    """The lines of README's configuration section, and the tokens markdown-it makes of them
    (GitHub's tables enabled)."""
    text = README.read_text()
    body = text.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    return body.splitlines(), MarkdownIt("commonmark").enable("table").parse(body)


def _first_cells(tokens: list[Token]) -> list[str]:
    """The text of the first cell of each table body row."""
    cells: list[str] = []
    for index, token in enumerate(tokens):
        if token.type == "tr_open" and tokens[index + 1].type == "td_open":
            cells.append(tokens[index + 2].content)
    return cells


def test_readme_configuration_rows_are_all_inside_a_table() -> None:
    # Given the configuration section as a renderer parses it
    lines, tokens = _section()
    tables = [t.map for t in tokens if t.type == "table_open" and t.map is not None]
    # Then every line written as a table row lies inside a table (none became a paragraph)
    stray = [
        f"line {number + 1}: {line[:60]}"
        for number, line in enumerate(lines)
        if line.startswith("|") and not any(start <= number < end for start, end in tables)
    ]
    assert tables, "expected a table in README's configuration section"
    assert not stray, f"{len(stray)} row(s) outside any table (cut by a blank line?): {stray[:3]}"


def test_readme_configuration_table_names_every_setting() -> None:
    # Given the variables the table's first column names
    _, tokens = _section()
    named = {name for cell in _first_cells(tokens) for name in re.findall(r"`([A-Z0-9_]+)`", cell)}
    # Then each field of Settings has a row
    missing = sorted(name.upper() for name in Settings.model_fields if name.upper() not in named)
    assert not missing, f"settings without a row in README's configuration table: {missing}"


def test_readme_configuration_check_sees_a_table_cut_by_a_blank_line() -> None:
    # Given a table with a blank line inside it
    text = "| a | b |\n|---|---|\n| `X` | 1 |\n\n| `Y` | 2 |\n"
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    # Then the row after the blank line is not a table row
    assert _first_cells(tokens) == ["`X`"]
