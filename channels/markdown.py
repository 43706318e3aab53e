"""Markdown (as models write it) to atoms, through markdown-it-py's token stream.

Block structure becomes text (blank lines between blocks, "• " and "1. " list markers,
headings in bold); inline structure becomes spans from the platform's `Dialect`. Raw HTML in
the Markdown is treated as text, so it is escaped rather than passed through.
"""

from __future__ import annotations

from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from channels.markup import Atom, Close, Dialect, Open, Raw, Span

_PARSER = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"])

_INLINE_SPANS = {"strong": "bold", "em": "italic", "s": "strike"}


def render(markdown: str, dialect: Dialect) -> list[Atom]:
    """The atoms for `markdown` in `dialect`. Pure and deterministic; never raises on any
    input string."""
    renderer = _Renderer(dialect)
    renderer.blocks(_PARSER.parse(markdown))
    return renderer.atoms


class _Renderer:
    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.atoms: list[Atom] = []
        self._pending = ""  # separator owed before the next block's content
        self._lists: list[tuple[bool, int]] = []  # (ordered, next number)
        self._quote_depth = 0
        self._quote_spans: list[Span | None] = []
        self._spans: list[Span | None] = []  # inline spans opened, None where one was skipped
        self._in_link = 0
        self._cells = 0

    # blocks -----------------------------------------------------------------------------

    def blocks(self, tokens: Sequence[Token]) -> None:
        for token in tokens:
            handler = getattr(self, f"_on_{token.type}", None)
            if handler is not None:
                handler(token)

    def _on_inline(self, token: Token) -> None:
        self._flush()
        self.inline(token.children or [])

    def _on_paragraph_close(self, token: Token) -> None:
        self._pending = "\n" if token.hidden else "\n\n"

    def _on_heading_open(self, token: Token) -> None:
        self._flush()
        self._open(self.dialect.bold())

    def _on_heading_close(self, token: Token) -> None:
        self._close()
        self._pending = "\n\n"

    def _on_fence(self, token: Token) -> None:
        self._code_block(token.content, token.info.strip().split(" ")[0])

    def _on_code_block(self, token: Token) -> None:
        self._code_block(token.content, "")

    def _on_hr(self, token: Token) -> None:
        self._flush()
        self._text("———")
        self._pending = "\n\n"

    def _on_bullet_list_open(self, token: Token) -> None:
        self._lists.append((False, 1))

    def _on_ordered_list_open(self, token: Token) -> None:
        start = token.attrGet("start")
        self._lists.append((True, int(start) if start is not None else 1))

    def _on_bullet_list_close(self, token: Token) -> None:
        self._lists.pop()
        self._pending = "\n\n"

    _on_ordered_list_close = _on_bullet_list_close

    def _on_list_item_open(self, token: Token) -> None:
        ordered, number = self._lists[-1]
        self._lists[-1] = (ordered, number + 1)
        self._flush()
        marker = f"{number}. " if ordered else "• "
        self._text("   " * (len(self._lists) - 1) + marker)

    def _on_list_item_close(self, token: Token) -> None:
        # One line per item even in loose lists: blank lines between items read badly in chat.
        self._pending = "\n"

    def _on_blockquote_open(self, token: Token) -> None:
        self._flush()
        span = self.dialect.quote() if self._quote_depth == 0 else None
        self._quote_spans.append(span)
        if span is not None:
            self.atoms.append(Open(span))
        self._quote_depth += 1
        if self.dialect.quote() is None:
            prefix = Raw(self.dialect.quote_prefix * self._quote_depth)
            if self.atoms and isinstance(self.atoms[-1], Raw):
                self.atoms[-1] = prefix  # the line already has the outer quote's prefix
            else:
                self.atoms.append(prefix)

    def _on_blockquote_close(self, token: Token) -> None:
        self._quote_depth -= 1
        span = self._quote_spans.pop()
        if span is not None:
            self.atoms.append(Close(span))
        self._pending = "\n\n"

    def _on_tr_open(self, token: Token) -> None:
        self._flush()
        self._cells = 0

    def _on_tr_close(self, token: Token) -> None:
        self._pending = "\n"

    def _on_th_open(self, token: Token) -> None:
        if self._cells:
            self._text(" | ")
        self._cells += 1
        self._pending = ""

    _on_td_open = _on_th_open

    def _on_th_close(self, token: Token) -> None:
        self._pending = ""

    _on_td_close = _on_th_close

    def _on_table_close(self, token: Token) -> None:
        self._pending = "\n\n"

    # inline -----------------------------------------------------------------------------

    def inline(self, children: Sequence[Token]) -> None:
        for child in children:
            kind = child.type
            if kind == "text":
                self._text(child.content)
            elif kind in ("softbreak", "hardbreak"):
                self._text("\n")
            elif kind == "code_inline":
                self._code_inline(child.content)
            elif kind.endswith("_open") and kind[:-5] in _INLINE_SPANS:
                self._open(getattr(self.dialect, _INLINE_SPANS[kind[:-5]])())
            elif kind.endswith("_close") and kind[:-6] in _INLINE_SPANS:
                self._close()
            elif kind == "link_open":
                self._open(self._link(str(child.attrGet("href") or "")))
                self._in_link += 1
            elif kind == "link_close":
                self._in_link -= 1
                self._close()
            elif kind == "image":
                self._image(child)
            else:
                self._text(child.content)

    def _image(self, token: Token) -> None:
        alt = "".join(c.content for c in token.children or []) or token.content
        src = str(token.attrGet("src") or "")
        self._open(self._link(src))
        self._text(alt or src)
        self._close()

    def _link(self, href: str) -> Span | None:
        if self._in_link:
            return None  # links cannot nest
        return self.dialect.link(href)

    def _code_inline(self, content: str) -> None:
        span = None if self._in_link else self.dialect.code()
        self._open(span)
        self._text(content)
        self._close()

    def _code_block(self, content: str, language: str) -> None:
        self._flush()
        self._open(self.dialect.pre(language))
        self._text(content.removesuffix("\n"), prefix_lines=False)
        self._close()
        self._pending = "\n\n"

    # output -----------------------------------------------------------------------------

    def _flush(self) -> None:
        if self._pending and any(isinstance(a, str) and a for a in self.atoms):
            self._text(self._pending)
        self._pending = ""

    def _open(self, span: Span | None) -> None:
        self._spans.append(span)
        if span is not None:
            self.atoms.append(Open(span))

    def _close(self) -> None:
        span = self._spans.pop() if self._spans else None
        if span is not None:
            self.atoms.append(Close(span))

    def _text(self, text: str, *, prefix_lines: bool = True) -> None:
        if not (self._quote_depth and self.dialect.quote() is None and prefix_lines):
            if text:
                self.atoms.append(text)
            return
        prefix = Raw(self.dialect.quote_prefix * self._quote_depth)
        for index, line in enumerate(text.split("\n")):
            if index:
                self.atoms.extend(["\n", prefix])
            if line:
                self.atoms.append(line)
