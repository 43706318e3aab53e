"""The FTS5 index: BM25 ranking, and a sync that reads only what changed."""

from __future__ import annotations

from pathlib import Path

from harness.search.extract import passages
from harness.search.index import Checks, SearchIndex, Stamp, Synced, match_expression


class Files:
    """An in-memory folder: path -> text, with the paths read so far."""

    def __init__(self, **texts: str) -> None:
        self.texts = {f"{name}.md": text for name, text in texts.items()}
        self.stamps = {path: Stamp(1, len(text)) for path, text in self.texts.items()}
        self.read_paths: list[str] = []

    def read(self, path: str) -> bytes:
        self.read_paths.append(path)
        if path not in self.texts:
            raise FileNotFoundError(path)
        return self.texts[path].encode()

    def change(self, name: str, text: str) -> None:
        path = f"{name}.md"
        self.texts[path] = text
        self.stamps[path] = Stamp(self.stamps.get(path, Stamp(1, 0)).mtime_ns + 1, len(text))

    def delete(self, name: str) -> None:
        del self.texts[f"{name}.md"], self.stamps[f"{name}.md"]

    def sync(self, index: SearchIndex, key: str = "k") -> None:
        index.sync(key, dict(self.stamps), self.read, passages)


def test_index_ranks_the_passage_with_more_and_rarer_query_words_first(tmp_path: Path) -> None:
    # Given three notes, one about the dentist appointment
    index = SearchIndex(tmp_path / "index.sqlite")
    files = Files(
        a="The user likes tea in the morning.",
        b="The dentist appointment is on 2026-07-14 at 10:00 with Dr Alvarez.",
        c="The user has an appointment with the bank.",
    )
    files.sync(index)
    # When searching in free text
    hits = index.query("When is my dentist appointment?", ["k"])
    # Then the dentist note comes first, the bank one after, the tea one not at all
    assert [h.path for h in hits] == ["b.md", "c.md"], hits
    assert "[dentist]" in hits[0].snippet and hits[0].position == "line 1"


def test_index_sync_reindexes_a_changed_file_only(tmp_path: Path) -> None:
    # Given an index of two files
    index = SearchIndex(tmp_path / "index.sqlite")
    files = Files(a="the blue car", b="the green boat")
    files.sync(index)
    files.read_paths.clear()
    # When one file changes and the index syncs again
    files.change("a", "the red bicycle")
    synced = index.sync("k", dict(files.stamps), files.read, passages)
    # Then only that file was read, its new words are found and its old ones are not
    assert files.read_paths == ["a.md"] and synced.indexed == ("a.md",)
    assert [h.path for h in index.query("bicycle", ["k"])] == ["a.md"]
    assert index.query("car", ["k"]) == []
    assert [h.path for h in index.query("boat", ["k"])] == ["b.md"]


def test_index_sync_restamps_a_touched_file_without_reindexing(tmp_path: Path) -> None:
    # Given an indexed file whose mtime changes but not its bytes
    index = SearchIndex(tmp_path / "index.sqlite")
    files = Files(a="the blue car")
    files.sync(index)
    files.change("a", "the blue car")
    # When synced twice
    first = index.sync("k", dict(files.stamps), files.read, passages)
    files.read_paths.clear()
    files.sync(index)
    # Then it was read once to compare hashes, never reindexed, and not read again
    assert first.indexed == () and files.read_paths == []
    assert index.files("k")["a.md"] == files.stamps["a.md"]


def test_index_sync_drops_a_deleted_file(tmp_path: Path) -> None:
    # Given an index of two files
    index = SearchIndex(tmp_path / "index.sqlite")
    files = Files(a="the blue car", b="the green boat")
    files.sync(index)
    # When one is deleted
    files.delete("b")
    synced = index.sync("k", dict(files.stamps), files.read, passages)
    # Then its passages are gone
    assert synced.dropped == ("b.md",)
    assert index.query("boat", ["k"]) == [] and set(index.files("k")) == {"a.md"}


def test_index_query_sees_only_the_keys_it_names(tmp_path: Path) -> None:
    # Given two keys holding the same word
    index = SearchIndex(tmp_path / "index.sqlite")
    Files(a="door code 4711").sync(index, "chat-a")
    Files(a="door code 1234").sync(index, "chat-b")
    # When chat B's key is searched
    hits = index.query("door code", ["chat-b"])
    # Then only chat B's passage comes back
    assert [h.key for h in hits] == ["chat-b"] and "1234" in hits[0].snippet


def test_index_keeps_the_files_of_one_key_when_another_syncs(tmp_path: Path) -> None:
    index = SearchIndex(tmp_path / "index.sqlite")
    Files(a="alpha").sync(index, "one")
    Files(b="beta").sync(index, "two")

    assert [h.key for h in index.query("alpha", ["one", "two"])] == ["one"]


def test_match_expression_quotes_words_and_drops_common_ones() -> None:
    assert match_expression('What is "the" code of AND door?') == '"code" OR "door"'
    assert match_expression("the") == '"the"'
    assert match_expression("?!") == ""


def test_index_sync_paths_touches_only_the_paths_it_is_given(tmp_path: Path) -> None:
    # Given an index of three files, two of which then change and one is deleted
    index = SearchIndex(tmp_path / "index.sqlite")
    files = Files(a="the blue car", b="the green boat", c="the red kite")
    files.sync(index)
    files.read_paths.clear()
    files.change("a", "the blue bicycle")
    files.change("b", "the green canoe")
    files.delete("c")
    # When only a's and c's paths are synced (c stamped None: gone)
    synced = index.sync_paths(
        "k", {"a.md": files.stamps["a.md"], "c.md": None}, files.read, passages
    )
    # Then a is reindexed, c dropped, and b, not named, keeps its old text unread
    assert synced == Synced(indexed=("a.md",), dropped=("c.md",)), synced
    assert files.read_paths == ["a.md"]
    assert [h.path for h in index.query("boat", ["k"])] == ["b.md"]
    assert index.query("kite", ["k"]) == []


def test_index_checks_count_full_and_path_syncs_and_the_stamps_compared(tmp_path: Path) -> None:
    # Given an index of two files
    index = SearchIndex(tmp_path / "index.sqlite")
    files = Files(a="the blue car", b="the green boat")
    # When it is synced whole once and by one path once
    files.sync(index)
    index.sync_paths("k", {"a.md": files.stamps["a.md"]}, files.read, passages)
    # Then the counter says so
    assert index.checks == Checks(full_syncs=1, path_syncs=1, stamps=3), index.checks


def test_index_generation_moves_when_any_process_clears_it(tmp_path: Path) -> None:
    # Given two connections to one index file
    index = SearchIndex(tmp_path / "index.sqlite")
    other = SearchIndex(tmp_path / "index.sqlite")
    before = index.generation()
    # When the other clears it
    other.clear()
    # Then this one sees the generation move
    assert index.generation() == before + 1
