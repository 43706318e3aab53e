"""Freshness without a scan per query: a query syncs only what a watcher or this process's own
writes marked, every file once per `rescan` seconds, and never follows a link."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from harness.agent.memory.notes import append_note
from harness.search import freshness as freshness_module
from harness.search.corpora import Corpus, knowledge_corpus, memory_corpus
from harness.search.freshness import Freshness
from harness.search.index import SearchIndex
from harness.search.tool import SearchParams, SearchTool
from harness.tools.base import ToolContext
from harness.workspace_files import unlink, write_replace
from tests.waiting import wait_until


class Clock:
    """Seconds that move only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def blind_observer() -> BaseObserver:
    """A watcher that sees nothing in a test's time: watchdog's poller, polling hourly."""
    return PollingObserver(timeout=3600)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "knowledge").mkdir(parents=True)
    (root / "memory").mkdir()
    (root / "knowledge" / "plan.md").write_text("The launch is in March.\n")
    return root


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SearchIndex]:
    found = SearchIndex(tmp_path / "state" / "index.sqlite")
    yield found
    found.close()


def _fresh(**options: object) -> Iterator[Freshness]:
    freshness = Freshness(**options)  # type: ignore[arg-type]
    try:
        yield freshness
    finally:
        freshness.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def watching(clock: Clock) -> Iterator[Freshness]:
    """A freshness with a real watcher (inotify) and a clock that stands still."""
    yield from _fresh(rescan=60.0, clock=clock)


@pytest.fixture
def blind(clock: Clock) -> Iterator[Freshness]:
    """A freshness whose watcher sees nothing, and a clock that stands still."""
    yield from _fresh(rescan=60.0, clock=clock, observer=blind_observer)


def _finds(
    freshness: Freshness, index: SearchIndex, corpus: Corpus, word: str
) -> Callable[[], bool]:
    """A check for `wait_until`: bring `corpus` up to date, then look for `word`."""

    def check() -> bool:
        freshness.bring_up_to_date(index, corpus)
        return bool(index.query(word, [corpus.key]))

    return check


def _search(tool: SearchTool, workspace: Path, query: str) -> str:
    return tool.run(SearchParams(query=query), ToolContext(workspace))


def test_freshness_query_after_no_change_looks_at_no_file(
    workspace: Path, index: SearchIndex, watching: Freshness
) -> None:
    # Given a corpus synced once
    corpus = knowledge_corpus(workspace)
    watching.bring_up_to_date(index, corpus)
    first = index.checks
    threads = threading.active_count()
    # When five more queries bring it up to date with nothing changed
    for _ in range(5):
        watching.bring_up_to_date(index, corpus)
    # Then no listing and no stamp was made, and no thread started
    assert first.full_syncs == 1, first
    assert index.checks == first, index.checks
    assert threading.active_count() == threads


def test_freshness_own_write_is_found_by_the_very_next_query(
    workspace: Path, tmp_path: Path, blind: Freshness
) -> None:
    # Given a search whose watcher sees nothing, after a first query
    tool = SearchTool(tmp_path / "state" / "index.sqlite", freshness=blind)
    assert "plan.md" in _search(tool, workspace, "launch")
    # When our own code writes a document, deletes one and appends a memory note
    write_replace(workspace, "knowledge/trip.md", b"The ferry leaves at noon.\n")
    unlink(workspace, "knowledge/plan.md")
    append_note(workspace, "The spare key is under the blue pot.", datetime.now(UTC))
    # Then the very next query finds all three, syncing those paths only
    assert "trip.md" in _search(tool, workspace, "ferry")
    assert _search(tool, workspace, "launch").startswith("nothing found")
    assert "memory/" in _search(tool, workspace, "spare key")
    assert tool.index().checks.full_syncs == 2, tool.index().checks  # the first query's


def test_freshness_plain_write_is_found_once_the_watcher_reports_it(
    workspace: Path, index: SearchIndex, watching: Freshness
) -> None:
    # Given a watched corpus synced once
    corpus = knowledge_corpus(workspace)
    watching.bring_up_to_date(index, corpus)
    # When another writer (a plain write, no tool of ours) adds, edits and deletes
    (workspace / "knowledge" / "new.md").write_text("The ferry leaves at noon.\n")
    (workspace / "knowledge" / "plan.md").write_text("The launch moved to September.\n")
    wanted = {"knowledge/new.md", "knowledge/plan.md"}
    wait_until(lambda: wanted <= watching.pending(corpus.key), "the watcher's events")
    synced = watching.bring_up_to_date(index, corpus)
    (workspace / "knowledge" / "new.md").unlink()
    dropped: list[str] = []

    def delete_seen() -> bool:
        # a late event of the writes above may be pending first: query until the delete lands
        dropped.extend(watching.bring_up_to_date(index, corpus).dropped)
        return bool(dropped)

    wait_until(delete_seen, "the watcher's delete event")
    # Then each query synced just those paths, never the whole corpus again
    assert set(synced.indexed) == wanted, synced
    assert dropped == ["knowledge/new.md"], dropped
    assert [h.path for h in index.query("september", [corpus.key])] == ["knowledge/plan.md"]
    assert index.query("ferry", [corpus.key]) == []
    assert index.checks.full_syncs == 1, index.checks


def test_freshness_change_the_watcher_misses_is_found_after_rescan(
    workspace: Path, index: SearchIndex, blind: Freshness, clock: Clock
) -> None:
    # Given a corpus synced once by a watcher that sees nothing (another host's write)
    corpus = knowledge_corpus(workspace)
    blind.bring_up_to_date(index, corpus)
    (workspace / "knowledge" / "new.md").write_text("The ferry leaves at noon.\n")
    # When queried just before and then at the rescan bound
    clock.now += 59.9
    blind.bring_up_to_date(index, corpus)
    before = index.query("ferry", [corpus.key])
    clock.now += 0.1
    blind.bring_up_to_date(index, corpus)
    # Then the change is found at the bound, not before, by listing every file
    assert before == []
    assert [h.path for h in index.query("ferry", [corpus.key])] == ["knowledge/new.md"]
    assert index.checks.full_syncs == 2, index.checks


def test_freshness_watches_a_folder_made_after_the_first_query(
    tmp_path: Path, index: SearchIndex, watching: Freshness
) -> None:
    # Given a workspace with no knowledge/ yet, searched once
    workspace = tmp_path / "bare"
    workspace.mkdir()
    corpus = knowledge_corpus(workspace)
    watching.bring_up_to_date(index, corpus)
    # When knowledge/ is made and a document put in it by a plain write
    (workspace / "knowledge").mkdir()
    (workspace / "knowledge" / "a.md").write_text("The ferry leaves at noon.\n")

    # Then a query finds it, and knowledge/ is watched from then on (a due full listing may
    # find the file before the folder's own event has had its watch set: query until both)
    found = _finds(watching, index, corpus, "ferry")
    wait_until(
        lambda: found() and workspace / "knowledge" in watching.watched(),
        "the document in the new folder, and the folder watched",
    )


def test_freshness_lists_again_after_another_process_clears_the_index(
    workspace: Path, index: SearchIndex, watching: Freshness
) -> None:
    # Given a synced corpus
    corpus = knowledge_corpus(workspace)
    watching.bring_up_to_date(index, corpus)
    # When `harness knowledge reindex` (another connection) empties the index
    SearchIndex(index.path).clear()
    watching.bring_up_to_date(index, corpus)
    # Then the next query lists the corpus again and finds its document
    assert [h.path for h in index.query("launch", [corpus.key])] == ["knowledge/plan.md"]


def test_freshness_follows_no_link_out_of_the_workspace(
    tmp_path: Path, index: SearchIndex, watching: Freshness
) -> None:
    # Given knowledge/ is a link to a folder outside the workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The vault code is 4711.\n")
    workspace = tmp_path / "linked"
    workspace.mkdir()
    (workspace / "knowledge").symlink_to(outside)
    corpus = knowledge_corpus(workspace)
    # When searched, and the outside folder written to
    watching.bring_up_to_date(index, corpus)
    (outside / "more.md").write_text("The vault code changed.\n")
    watching.bring_up_to_date(index, corpus)
    # Then no watch is set through the link and nothing outside is indexed
    assert all(not folder.is_relative_to(outside) for folder in watching.watched())
    assert workspace / "knowledge" not in watching.watched()
    assert index.query("vault", [corpus.key]) == []


def test_freshness_rescan_zero_starts_no_watcher_and_lists_every_query(
    workspace: Path, index: SearchIndex
) -> None:
    # Given freshness with rescan 0 (the old behaviour)
    for freshness in _fresh(rescan=0.0):
        corpus = memory_corpus(workspace)
        threads = threading.active_count()
        # When queried three times
        for _ in range(3):
            freshness.bring_up_to_date(index, corpus)
        # Then every query listed every file, and no watcher thread started
        assert index.checks.full_syncs == 3, index.checks
        assert threading.active_count() == threads and not freshness.watched()


def test_freshness_close_stops_its_watcher_thread(
    workspace: Path, index: SearchIndex, clock: Clock
) -> None:
    # Given a freshness whose watcher was started by a query
    before = set(threading.enumerate())
    freshness = Freshness(rescan=60.0, clock=clock)
    freshness.bring_up_to_date(index, knowledge_corpus(workspace))
    assert set(threading.enumerate()) - before, "the first query should start the watcher"
    # When closed (twice: idempotent)
    freshness.close()
    freshness.close()
    # Then its threads are gone
    assert set(threading.enumerate()) - before == set()


def test_freshness_watches_a_folder_removed_and_made_again(
    workspace: Path, index: SearchIndex, watching: Freshness
) -> None:
    # Given a watched knowledge/ that is removed and made again by another process
    corpus = knowledge_corpus(workspace)
    watching.bring_up_to_date(index, corpus)
    shutil.rmtree(workspace / "knowledge")
    (workspace / "knowledge").mkdir()
    (workspace / "knowledge" / "a.md").write_text("The ferry leaves at noon.\n")

    wait_until(_finds(watching, index, corpus, "ferry"), "the document in the folder made again")
    # When a later plain write lands in the new folder
    (workspace / "knowledge" / "b.md").write_text("The train leaves at six.\n")
    # Then the new folder's watch reports it
    wait_until(lambda: "knowledge/b.md" in watching.pending(corpus.key), "the new watch's event")
    assert index.query("launch", [corpus.key]) == []


def test_freshness_keeps_up_with_writes_while_its_watches_are_set_again(
    workspace: Path, index: SearchIndex, watching: Freshness
) -> None:
    # Given a writer adding documents and folders (each folder sets the watches again)
    corpus = knowledge_corpus(workspace)
    watching.bring_up_to_date(index, corpus)
    done = threading.Event()

    def write() -> None:
        for n in range(60):
            folder = workspace / "knowledge" / f"f{n}"
            folder.mkdir()
            (folder / "a.md").write_text(f"note {n} about the ferry\n")
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    # When queries run all the while
    while not done.is_set():
        watching.bring_up_to_date(index, corpus)
    writer.join()

    def all_found() -> bool:
        watching.bring_up_to_date(index, corpus)
        return len(index.query("ferry", [corpus.key], limit=100)) == 60

    # Then no lock is ever held against the watcher's thread, and every document is found
    wait_until(all_found, "all 60 documents")


def test_freshness_watches_at_most_max_tracked_corpora(
    tmp_path: Path, index: SearchIndex, watching: Freshness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given room for two corpora
    monkeypatch.setattr(freshness_module, "MAX_TRACKED", 2)
    roots = [tmp_path / f"root{n}" for n in range(3)]
    for root in roots:
        (root / "knowledge").mkdir(parents=True)
    # When three are searched
    for root in roots:
        watching.bring_up_to_date(index, knowledge_corpus(root))
    # Then the least recently searched is no longer watched
    assert roots[0] / "knowledge" not in watching.watched()
    assert {roots[1] / "knowledge", roots[2] / "knowledge"} <= watching.watched()
