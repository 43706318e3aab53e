"""Documents cut into passages: by blank lines, and a page-long line cut at words."""

from __future__ import annotations

from harness.search.extract import PASSAGE_CHARS, passages, text_passages


def test_text_passages_start_at_their_line() -> None:
    text = "a" * PASSAGE_CHARS + "\n\nsecond paragraph\nstill second\n"

    found = text_passages(text)

    assert [p.position for p in found] == ["line 1", "line 3"], found


def test_a_long_line_is_cut_at_words_into_short_passages() -> None:
    # Given an HTML page whose whole text is one paragraph
    words = " ".join(f"word{n}" for n in range(1000))
    # When it is cut into passages
    found = passages("page.html", f"<p>{words}</p>".encode())
    # Then every passage is short, none splits a word, and all the words are kept
    assert len(found) > 5 and all(len(p.text) <= PASSAGE_CHARS for p in found)
    assert " ".join(p.text for p in found).split() == words.split()


def test_an_unknown_kind_or_a_broken_pdf_has_no_passages() -> None:
    assert passages("photo.jpg", b"\xff\xd8") == []
    assert passages("broken.pdf", b"%PDF-1.4 garbage") == []
