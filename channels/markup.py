"""Formatted text as a flat stream of atoms, shared by the platform formatters.

A formatter renders Markdown into atoms (`channels.markdown`), splits them into messages
(`channels.chunking`), then serialises each chunk in its platform's markup. Keeping spans
explicit lets the splitter close and reopen them at a chunk boundary, which splitting the
finished markup string cannot do safely.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias


@dataclass(frozen=True)
class Span:
    """A formatting span: the markup that opens and closes it. Inside a `literal` span (a code
    block) whitespace is content, so a chunk boundary there keeps it."""

    opening: str
    closing: str
    literal: bool = False


@dataclass(frozen=True)
class Open:
    """Start of a span."""

    span: Span


@dataclass(frozen=True)
class Close:
    """End of the innermost open span (always the one it names)."""

    span: Span


@dataclass(frozen=True)
class Raw:
    """Markup written as is, outside any span (Slack's "> " at the start of a quoted line)."""

    markup: str


Atom: TypeAlias = str | Open | Close | Raw
"""A piece of formatted text: a `str` is plain, unescaped text."""


class Dialect(Protocol):
    """How one platform writes formatted text, and how its length limit counts."""

    limit: int
    """The most a message may count, in the units of `text_width` and `markup_width`."""

    quote_prefix: str
    """Written at the start of every quoted line when `quote()` is None (Slack's "> ")."""

    def escape(self, text: str) -> str:
        """Plain text as it must appear in the markup."""
        ...

    def text_width(self, text: str) -> int:
        """How much plain text counts toward `limit`."""
        ...

    def markup_width(self, markup: str) -> int:
        """How much span markup counts toward `limit` (0 where the platform counts only text)."""
        ...

    def bold(self) -> Span: ...
    def italic(self) -> Span: ...
    def strike(self) -> Span: ...
    def code(self) -> Span: ...

    def pre(self, language: str) -> Span:
        """A code block; `language` may be empty."""
        ...

    def link(self, href: str) -> Span | None:
        """A link to `href`, or None when the platform cannot link there (the text stays)."""
        ...

    def quote(self) -> Span | None:
        """A block quote span, or None when quotes are written with `quote_prefix`."""
        ...


def serialize(atoms: Iterable[Atom], dialect: Dialect) -> str:
    """Atoms written in the dialect's markup."""
    out: list[str] = []
    for atom in atoms:
        if isinstance(atom, str):
            out.append(dialect.escape(atom))
        elif isinstance(atom, Open):
            out.append(atom.span.opening)
        elif isinstance(atom, Raw):
            out.append(atom.markup)
        else:
            out.append(atom.span.closing)
    return "".join(out)


def plain(atoms: Iterable[Atom]) -> str:
    """The text of the atoms with all formatting dropped."""
    return "".join(atom for atom in atoms if isinstance(atom, str))


def drop_empty_spans(atoms: Sequence[Atom]) -> list[Atom]:
    """The atoms without spans that contain no text (platforms reject or mis-render them)."""
    out: list[Atom] = []
    for atom in atoms:
        if isinstance(atom, Close) and out and isinstance(out[-1], Open):
            out.pop()
            continue
        if isinstance(atom, str) and not atom:
            continue
        out.append(atom)
    return out


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts it."""
    return len(text.encode("utf-16-le")) // 2


def cut_utf16(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-16 code units, never inside a character."""
    if utf16_length(text) <= limit:
        return text
    out, used = [], 0
    for char in text:
        size = 2 if ord(char) > 0xFFFF else 1
        if used + size > limit:
            break
        out.append(char)
        used += size
    return "".join(out)
