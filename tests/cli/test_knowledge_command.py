"""`harness knowledge add|list|reindex`: documents copied into knowledge/ and indexed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.search.index import SearchIndex
from harness.search.tool import INDEX_FILE
from harness.settings import get_settings


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    ws = tmp_path / "workspace"
    ws.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    get_settings.cache_clear()
    yield ws
    get_settings.cache_clear()


def _hits(tmp_path: Path, query: str, workspace: Path) -> list[str]:
    index = SearchIndex(tmp_path / "state" / INDEX_FILE)
    try:
        return [h.path for h in index.query(query, [f"knowledge:{workspace}"])]
    finally:
        index.close()


def test_knowledge_add_copies_and_indexes_the_document(tmp_path: Path, workspace: Path) -> None:
    # Given a document outside the workspace
    doc = tmp_path / "recipes.md"
    doc.write_text("# Pancakes\n\nFlour, milk, two eggs.\n")
    # When it is added
    result = CliRunner().invoke(app, ["knowledge", "add", str(doc)])
    # Then it is in knowledge/ and already searchable
    assert result.exit_code == 0, result.output
    assert (workspace / "knowledge" / "recipes.md").read_text().startswith("# Pancakes")
    assert _hits(tmp_path, "eggs", workspace) == ["knowledge/recipes.md"]


def test_knowledge_add_refuses_to_replace_without_force(tmp_path: Path, workspace: Path) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text("one")
    CliRunner().invoke(app, ["knowledge", "add", str(doc)])

    again = CliRunner().invoke(app, ["knowledge", "add", str(doc)])

    assert again.exit_code == 1 and "--force" in again.output, again.output


def test_knowledge_add_refuses_a_kind_search_cannot_read(tmp_path: Path, workspace: Path) -> None:
    doc = tmp_path / "photo.jpg"
    doc.write_bytes(b"\xff\xd8")

    result = CliRunner().invoke(app, ["knowledge", "add", str(doc)])

    assert result.exit_code == 2 and "not a kind search reads" in result.output, result.output


def test_knowledge_list_and_reindex(tmp_path: Path, workspace: Path) -> None:
    # Given a document put in knowledge/ by hand, not yet indexed
    (workspace / "knowledge").mkdir()
    (workspace / "knowledge" / "faq.txt").write_text("Opening hours: 9 to 5\n")
    before = CliRunner().invoke(app, ["knowledge", "list"], env={"COLUMNS": "200"})
    # When the index is rebuilt
    rebuilt = CliRunner().invoke(app, ["knowledge", "reindex"])
    after = CliRunner().invoke(app, ["knowledge", "list"], env={"COLUMNS": "200"})
    # Then the list says it is indexed now, and it is found
    assert "at the next search" in before.output, before.output
    assert "indexed 1 document(s)" in rebuilt.output, rebuilt.output
    assert "knowledge/faq.txt" in after.output and "yes" in after.output, after.output
    assert _hits(tmp_path, "opening hours", workspace) == ["knowledge/faq.txt"]
