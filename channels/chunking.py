"""Split formatted text into messages that fit a platform's size limit.

Cuts fall, in order of preference, on a paragraph break, a line break, a space, and only then
anywhere, and a cut never leaves the chunk less than half full when a later one exists. Spans
open at a cut are closed at the end of the chunk and reopened at the start of the next, so
every chunk is balanced markup on its own, code blocks included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from channels.markup import Atom, Close, Dialect, Open, Raw, Span, drop_empty_spans

_PARAGRAPH, _LINE, _WORD = 0, 1, 2
_SPACES = frozenset(" \t")


@dataclass(frozen=True)
class _Cut:
    kind: int
    index: int  # the whitespace unit the cut replaces
    width: int  # width of the chunk before it
    spans: tuple[Span, ...]  # spans open there


def split(atoms: Sequence[Atom], dialect: Dialect, limit: int | None = None) -> list[list[Atom]]:
    """Split `atoms` into chunks whose width (text plus markup, as the dialect counts them) is
    at most `limit` (default `dialect.limit`). Each chunk is balanced and holds some visible
    text; whitespace-only input gives no chunks. Deterministic: the same input always gives the
    same chunks."""
    return _Splitter(dialect, limit or dialect.limit).split(_units(atoms))


def _units(atoms: Sequence[Atom]) -> list[Atom]:
    units: list[Atom] = []
    for atom in atoms:
        if isinstance(atom, str):
            units.extend(atom)
        else:
            units.append(atom)
    return units


class _Splitter:
    def __init__(self, dialect: Dialect, limit: int) -> None:
        self.dialect = dialect
        self.limit = limit

    def split(self, units: list[Atom]) -> list[list[Atom]]:
        chunks: list[list[Atom]] = []
        start = 0
        spans: tuple[Span, ...] = ()
        while start < len(units):
            start = self._skip_space(units, start, spans)
            if start >= len(units):
                break
            chunk, start, spans = self._take(units, start, spans)
            if any(isinstance(u, str) and not u.isspace() for u in chunk):
                chunks.append(_merge(drop_empty_spans(chunk)))
        return chunks

    def _take(
        self, units: list[Atom], start: int, spans: tuple[Span, ...]
    ) -> tuple[list[Atom], int, tuple[Span, ...]]:
        """One chunk from `start`: its atoms, where the next starts, the spans open there."""
        mw = self.dialect.markup_width
        open_spans = list(spans)
        width = sum(mw(s.opening) for s in open_spans)
        closing = sum(mw(s.closing) for s in open_spans)
        cuts: list[_Cut] = []
        has_text = False
        for index in range(start, len(units)):
            unit = units[index]
            if isinstance(unit, str):
                if index > start and (unit == "\n" or unit in _SPACES):
                    cuts.append(_Cut(_kind(units, index), index, width, tuple(open_spans)))
                grow, grow_closing = self.dialect.text_width(unit), 0
            elif isinstance(unit, Open):
                grow, grow_closing = mw(unit.span.opening), mw(unit.span.closing)
            elif isinstance(unit, Raw):
                grow, grow_closing = mw(unit.markup), 0
            else:
                grow, grow_closing = mw(unit.span.closing), -mw(unit.span.closing)
            if has_text and width + grow + closing + grow_closing > self.limit:
                return self._cut(units, start, spans, cuts, index, tuple(open_spans))
            width += grow
            closing += grow_closing
            if isinstance(unit, Open):
                open_spans.append(unit.span)
            elif isinstance(unit, Close):
                open_spans.pop()
            elif isinstance(unit, str):
                has_text = has_text or not unit.isspace()
        return self._chunk(units, start, len(units), spans, tuple(open_spans)), len(units), ()

    def _cut(
        self,
        units: list[Atom],
        start: int,
        spans: tuple[Span, ...],
        cuts: list[_Cut],
        overflow: int,
        open_at_overflow: tuple[Span, ...],
    ) -> tuple[list[Atom], int, tuple[Span, ...]]:
        cut = _best(cuts, self.limit // 2)
        if cut is None:  # no whitespace to cut at: cut hard where the limit was reached
            chunk = self._chunk(units, start, overflow, spans, open_at_overflow)
            return chunk, overflow, open_at_overflow
        chunk = self._chunk(units, start, cut.index, spans, cut.spans)
        return chunk, cut.index + 1, cut.spans

    @staticmethod
    def _chunk(
        units: list[Atom], start: int, end: int, before: tuple[Span, ...], after: tuple[Span, ...]
    ) -> list[Atom]:
        reopened: list[Atom] = [Open(span) for span in before]
        closed: list[Atom] = [Close(span) for span in reversed(after)]
        return [*reopened, *_rstrip(drop_empty_spans(units[start:end]), after), *closed]

    @staticmethod
    def _skip_space(units: list[Atom], start: int, spans: tuple[Span, ...]) -> int:
        if any(span.literal for span in spans):
            return start
        while start < len(units) and isinstance(units[start], str) and str(units[start]).isspace():
            start += 1
        return start


def _kind(units: list[Atom], index: int) -> int:
    if units[index] != "\n":
        return _WORD
    neighbours = (units[index - 1], units[index + 1] if index + 1 < len(units) else "")
    return _PARAGRAPH if "\n" in neighbours else _LINE


def _best(cuts: list[_Cut], min_width: int) -> _Cut | None:
    for kind in (_PARAGRAPH, _LINE, _WORD):
        for cut in reversed(cuts):
            if cut.kind == kind and cut.width >= min_width:
                return cut
    return next((cut for cut in reversed(cuts) if cut.width > 0), None)


def _rstrip(units: list[Atom], spans: tuple[Span, ...]) -> list[Atom]:
    """Drop trailing whitespace, except inside a code block where it is content."""
    if any(span.literal for span in spans):
        return units
    end = len(units)
    while end and isinstance(units[end - 1], str) and str(units[end - 1]).isspace():
        end -= 1
    return units[:end]


def _merge(units: list[Atom]) -> list[Atom]:
    merged: list[Atom] = []
    for unit in units:
        if isinstance(unit, str) and merged and isinstance(merged[-1], str):
            merged[-1] += unit
        else:
            merged.append(unit)
    return merged
