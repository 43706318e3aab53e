"""What the search tool reads: documents of every kind, each conversation's own memory and
transcript, and never a link."""

from __future__ import annotations

import os
from pathlib import Path

from harness.agent.session import SessionLine, SessionStore
from harness.llm.types import Message
from harness.search.corpora import knowledge_corpus, memory_corpus
from harness.search.tool import SearchParams, SearchTool
from harness.tools.base import ToolContext
from tests.pdf_files import write_pdf
from tests.waiting import wait_until


def _search(tool: SearchTool, ctx: ToolContext, query: str, within: str = "all") -> str:
    return tool.run(SearchParams(query=query, within=within), ctx)  # type: ignore[arg-type]


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "knowledge").mkdir(parents=True)
    (workspace / "memory").mkdir()
    return workspace


def test_search_finds_a_pdf_page_with_its_position(tmp_path: Path) -> None:
    # Given a two-page PDF in knowledge/
    workspace = _workspace(tmp_path)
    write_pdf(workspace / "knowledge" / "lease.pdf", "Rent is due monthly", "Deposit 900 EUR")
    tool = SearchTool(tmp_path / "state" / "index.sqlite")
    # When searching for the deposit
    found = _search(tool, ToolContext(workspace), "deposit amount")
    # Then the second page is named
    assert found.startswith("1. knowledge: knowledge/lease.pdf, page 2, line 1"), found
    assert "[Deposit] 900 EUR" in found


def test_search_finds_html_text_but_not_its_scripts(tmp_path: Path) -> None:
    # Given an HTML page with a script
    workspace = _workspace(tmp_path)
    (workspace / "knowledge" / "guide").mkdir()
    (workspace / "knowledge" / "guide" / "wifi.html").write_text(
        "<html><head><title>Wifi</title><script>var password='zebra';</script></head>"
        "<body><p>The guest network is called Meadow.</p></body></html>"
    )
    tool = SearchTool(tmp_path / "state" / "index.sqlite")
    # When searching for its text and for its script
    found = _search(tool, ToolContext(workspace), "guest network")
    hidden = _search(tool, ToolContext(workspace), "zebra")
    # Then the text is found in its folder, the script is not indexed
    assert found.startswith("1. knowledge: knowledge/guide/wifi.html, line"), found
    assert "[guest] [network] is called Meadow" in found
    assert hidden.startswith("nothing found"), hidden


def test_search_refuses_links_in_knowledge_and_memory(tmp_path: Path) -> None:
    # Given a secret outside the workspace, linked from knowledge/ and from memory/
    workspace = _workspace(tmp_path)
    secret = tmp_path / "secret.md"
    secret.write_text("API token quokka\n")
    os.symlink(secret, workspace / "knowledge" / "notes.md")
    os.symlink(secret, workspace / "memory" / "2026-07-01.md")
    os.symlink(tmp_path, workspace / "knowledge" / "outside")
    tool = SearchTool(tmp_path / "state" / "index.sqlite")
    # When searching for it
    found = _search(tool, ToolContext(workspace), "quokka")
    # Then nothing comes back
    assert found.startswith("nothing found"), found


def test_search_reads_memory_history_but_not_other_chats_folders(tmp_path: Path) -> None:
    # Given a saved version of MEMORY.md, and a stray file deeper in memory/
    workspace = _workspace(tmp_path)
    (workspace / "memory" / "history").mkdir()
    (workspace / "memory" / "history" / "0001.md").write_text("Old address: Elm Street 4\n")
    (workspace / "memory" / "agents" / "coder").mkdir(parents=True)
    (workspace / "memory" / "agents" / "coder" / "MEMORY.md").write_text("Elm Street 9\n")
    tool = SearchTool(tmp_path / "state" / "index.sqlite")
    # When searching memory
    found = _search(tool, ToolContext(workspace), "Elm street", within="memory")
    # Then the history version is found, the named agent's memory is not
    assert "memory: memory/history/0001.md, line 1" in found and "Street 9" not in found


def test_search_finds_the_chats_own_archived_messages_only(tmp_path: Path) -> None:
    # Given two chats' transcripts, chat A's replaced once (its old lines archived)
    workspace, private = _workspace(tmp_path), tmp_path / "state"
    store = SessionStore(private)
    store.append("chat-a", [SessionLine(message=Message.user("my locker is number 318"))])
    store.replace("chat-a", [SessionLine(message=Message.user("new start"))])
    store.append("chat-b", [SessionLine(message=Message.user("my locker is number 512"))])
    tool = SearchTool(private / "index.sqlite")
    ctx_a = ToolContext(workspace, transcript=store.path_for("chat-a"))
    # When chat A searches its chat
    found = _search(tool, ctx_a, "locker number", within="chat")
    # Then its archived message is found and chat B's is not
    assert found.startswith("1. this chat (an earlier part), line 1"), found
    assert "318" in found and "512" not in found


def test_search_sees_a_document_changed_or_deleted_on_disk(tmp_path: Path) -> None:
    # Given two indexed documents
    workspace = _workspace(tmp_path)
    (workspace / "knowledge" / "plan.md").write_text("The launch is in March.\n")
    (workspace / "knowledge" / "old.md").write_text("The budget is frozen.\n")
    tool = SearchTool(tmp_path / "state" / "index.sqlite")
    assert "plan.md" in _search(tool, ToolContext(workspace), "launch")
    # When another process edits one and deletes the other (plain writes: the watcher sees them)
    (workspace / "knowledge" / "plan.md").write_text("The launch moved to September.\n")
    (workspace / "knowledge" / "old.md").unlink()
    wanted = {"knowledge/plan.md", "knowledge/old.md"}
    key = f"knowledge:{workspace}"
    wait_until(lambda: wanted <= tool.freshness().pending(key), "the watcher's events")
    # Then the next search finds the new text only, and nothing of the deleted one
    assert "September" in _search(tool, ToolContext(workspace), "launch")
    assert _search(tool, ToolContext(workspace), "march").startswith("nothing found")
    assert _search(tool, ToolContext(workspace), "budget frozen").startswith("nothing found")


def test_corpus_stamps_one_path_only_when_it_is_the_corpus_s(tmp_path: Path) -> None:
    # Given a workspace with a document, a memory note, a hidden file and a link
    workspace = _workspace(tmp_path)
    (workspace / "knowledge" / "a.md").write_text("one")
    (workspace / "knowledge" / ".draft.md").write_text("two")
    (workspace / "memory" / "2026-07-01.md").write_text("three")
    (workspace / "knowledge" / "link.md").symlink_to(workspace / "knowledge" / "a.md")
    knowledge, memory = knowledge_corpus(workspace), memory_corpus(workspace)
    # When single paths are stamped
    # Then exactly the paths the listing holds get a stamp
    assert knowledge.stamp("knowledge/a.md") == knowledge.listing()["knowledge/a.md"]
    assert knowledge.stamp("knowledge/.draft.md") is None
    assert knowledge.stamp("knowledge/link.md") is None
    assert knowledge.stamp("memory/2026-07-01.md") is None
    assert memory.stamp("memory/2026-07-01.md") == memory.listing()["memory/2026-07-01.md"]
    assert memory.stamp("knowledge/a.md") is None
    assert set(knowledge.listing()) == {"knowledge/a.md"}
