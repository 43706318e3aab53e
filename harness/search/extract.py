"""A document's text as passages, each with where it starts: the unit the index ranks.

Markdown and plain text are cut at blank lines into passages of about `PASSAGE_CHARS`
characters, positioned by line; a PDF by page (pypdf), then the same way within the page;
HTML through `harness.tools.html_text` (the page web_fetch would show), positioned by line of
that text. A file of any other kind, or one that cannot be parsed, has no passages.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath

log = logging.getLogger(__name__)

PASSAGE_CHARS = 800
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".rst", ".org", ".csv", ""})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES


@dataclass(frozen=True)
class Passage:
    """A piece of a document's text and where it starts (`line 12`, `page 3, line 4`)."""

    text: str
    position: str


def searchable(name: str) -> bool:
    """True when a file called `name` is of a kind `passages` can read."""
    return PurePosixPath(name).suffix.lower() in SUFFIXES


def passages(name: str, data: bytes) -> list[Passage]:
    """The passages of file `name` (its suffix picks the reader) holding `data`. Never raises:
    a document that cannot be parsed is logged and has none."""
    suffix = PurePosixPath(name).suffix.lower()
    try:
        if suffix in PDF_SUFFIXES:
            return _pdf(name, data)
        if suffix in HTML_SUFFIXES:
            return _html(data)
        if suffix in TEXT_SUFFIXES:
            return text_passages(data.decode("utf-8", errors="replace"))
    except (ValueError, KeyError, OSError) as exc:
        log.warning("%s not indexed: %s", name, exc)
    return []


def text_passages(text: str, prefix: str = "") -> list[Passage]:
    """`text` cut at blank lines into passages of about `PASSAGE_CHARS` characters, each
    positioned `<prefix>line N`; a line longer than that is cut at words into pieces of at
    most `PASSAGE_CHARS` (one word longer than that is a piece of its own)."""
    found: list[Passage] = []
    lines: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) > PASSAGE_CHARS:  # a page that is one long line: cut it at words
            if lines:
                found.append(Passage("\n".join(lines), f"{prefix}line {start}"))
                lines = []
            found += [Passage(p, f"{prefix}line {number}") for p in _pieces(line)]
            continue
        if not line.strip():
            if sum(len(x) for x in lines) >= PASSAGE_CHARS:
                found.append(Passage("\n".join(lines), f"{prefix}line {start}"))
                lines = []
            continue
        if not lines:
            start = number
        lines.append(line)
    if lines:
        found.append(Passage("\n".join(lines), f"{prefix}line {start}"))
    return found


def _pieces(line: str) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for word in line.split():
        if current and size + len(word) + 1 > PASSAGE_CHARS:
            pieces.append(" ".join(current))
            current, size = [], 0
        current.append(word)
        size += len(word) + 1
    return [*pieces, " ".join(current)] if current else pieces


def _html(data: bytes) -> list[Passage]:
    # Imported here: BeautifulSoup takes ~0.1 s to import, and every command that lists the
    # agent's tools builds the search tool (`harness agents`); only an HTML file needs it.
    from harness.tools.html_text import html_to_text

    title, text = html_to_text(data)
    return text_passages(f"# {title}\n\n{text}" if title else text)


def _pdf(name: str, data: bytes) -> list[Passage]:
    # Imported here: pypdf holds ~10 MB in every worker, and only a PDF needs it.
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        found: list[Passage] = []
        for number, page in enumerate(reader.pages, 1):
            found += text_passages(page.extract_text() or "", prefix=f"page {number}, ")
    except PyPdfError as exc:
        log.warning("%s not indexed: %s", name, exc)
        return []
    return found
