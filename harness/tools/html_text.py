"""Turning an HTML page into readable plain text for the model."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bs4.element import PageElement, Tag

_DROPPED = frozenset(
    {"script", "style", "nav", "noscript", "template", "svg", "iframe", "head", "title", "button"}
)
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
        "pre", "ul", "ol", "dl", "dt", "dd", "table", "tr", "figure", "figcaption", "hr",
        "address", "details", "summary", "body", "html",
    }
)  # fmt: skip
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_SPACES = re.compile(r"[ \t\r\f\v\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def html_to_text(document: bytes | str, encoding: str | None = None) -> tuple[str, str]:
    """Return `(title, text)` for an HTML document. Never raises on malformed HTML.

    Scripts, styles, navigation and forms are dropped; headings become `#` lines, list items
    `- ` lines, paragraphs and other blocks are separated by a blank line, `<pre>` keeps its
    whitespace, links keep their text. `encoding` is the charset from the HTTP header, if any.
    """
    # Imported here: Beautiful Soup holds ~5 MB in every worker and web process, and only a
    # fetched or indexed HTML page needs it.
    from bs4 import BeautifulSoup
    from bs4.element import (
        Comment,
        Declaration,
        Doctype,
        NavigableString,
        ProcessingInstruction,
        Tag,
    )

    skipped = (Comment, Declaration, Doctype, ProcessingInstruction)
    soup = BeautifulSoup(document, "html.parser", from_encoding=encoding)
    title_tag = soup.find("title")
    title = _SPACES.sub(" ", title_tag.get_text()).strip() if title_tag else ""
    parts: list[str] = []
    # An explicit stack rather than recursion: deeply nested pages must not overflow it.
    stack: list[PageElement | str] = [soup]
    pre_depth = 0
    while stack:
        item = stack.pop()
        if isinstance(item, str) and not isinstance(item, NavigableString):
            if item == _PRE_END:
                pre_depth -= 1
            else:
                parts.append(item)
        elif isinstance(item, NavigableString):
            if isinstance(item, skipped):
                continue
            if pre_depth:
                parts.append(str(item))
            else:
                text = _SPACES.sub(" ", item)
                # No space at the start of a line: it would come from source indentation.
                parts.append(text.lstrip(" ") if _at_line_start(parts) else text)
        elif isinstance(item, Tag):
            pre_depth += _open(item, parts, stack)
    return title, _tidy("".join(parts))


_PRE_END = "\x00pre-end"


def _open(tag: Tag, parts: list[str], stack: list[PageElement | str]) -> int:
    """Emit what precedes `tag`, push its children and closing text; return 1 if it is a pre."""
    name = tag.name
    if name in _DROPPED:
        return 0
    if name == "br":
        parts.append("\n")
        return 0
    if name == "pre":
        stack.append(_PRE_END)
    if name in _HEADINGS:
        parts.append("\n\n" + "#" * _HEADINGS[name] + " ")
        stack.append("\n\n")
    elif name == "li":
        parts.append("- " if _at_line_start(parts) else "\n- ")
        stack.append("\n")
    elif name in ("td", "th"):
        stack.append(" | ")
    elif name in _BLOCKS:
        parts.append("\n\n")
        stack.append("\n\n")
    stack.extend(reversed(list(tag.children)))
    return 1 if name == "pre" else 0


def _at_line_start(parts: list[str]) -> bool:
    for part in reversed(parts):
        if part:
            return part.endswith("\n")
    return True


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
