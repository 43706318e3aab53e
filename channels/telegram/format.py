"""Markdown from the model to Telegram HTML, split into messages Telegram accepts.

Only the tags `b i u s code pre a blockquote` are produced; `<`, `>` and `&` in text are
escaped. Telegram counts a message's length after parsing the HTML, in UTF-16 code units, so
tags do not count toward the 4,096 limit and an emoji counts two.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from channels import chunking, markdown
from channels.markup import Span, plain, serialize, utf16_length

MESSAGE_LIMIT = 4096
_LINK_SCHEMES = frozenset({"http", "https", "tg", "mailto"})
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")


class TelegramHtml:
    """The Telegram HTML `Dialect`."""

    limit = MESSAGE_LIMIT
    quote_prefix = ""

    def escape(self, text: str) -> str:
        return html.escape(text, quote=False)

    def text_width(self, text: str) -> int:
        return utf16_length(text)

    def markup_width(self, markup: str) -> int:
        return 0

    def bold(self) -> Span:
        return Span("<b>", "</b>")

    def italic(self) -> Span:
        return Span("<i>", "</i>")

    def strike(self) -> Span:
        return Span("<s>", "</s>")

    def code(self) -> Span:
        return Span("<code>", "</code>")

    def pre(self, language: str) -> Span:
        if _LANGUAGE.match(language):
            return Span(f'<pre><code class="language-{language}">', "</code></pre>", literal=True)
        return Span("<pre>", "</pre>", literal=True)

    def link(self, href: str) -> Span | None:
        if urlsplit(href).scheme.lower() not in _LINK_SCHEMES:
            return None
        return Span(f'<a href="{html.escape(href, quote=True)}">', "</a>")

    def quote(self) -> Span | None:
        return Span("<blockquote>", "</blockquote>")


DIALECT = TelegramHtml()


@dataclass(frozen=True)
class Chunk:
    """One Telegram message: its HTML, and the same text without formatting for the fallback."""

    html: str
    plain: str


def to_chunks(text: str, limit: int = MESSAGE_LIMIT) -> list[Chunk]:
    """`text` (Markdown) as Telegram messages, in order. Each chunk's HTML is balanced and at
    most `limit` UTF-16 code units after parsing; a blank text gives no chunks. Deterministic."""
    atoms = markdown.render(text, DIALECT)
    return [
        Chunk(html=serialize(chunk, DIALECT), plain=plain(chunk))
        for chunk in chunking.split(atoms, DIALECT, limit)
    ]


def to_html(text: str) -> str:
    """`text` (Markdown) as one Telegram HTML string, unsplit."""
    return serialize(markdown.render(text, DIALECT), DIALECT)


def to_plain_text(text: str) -> str:
    """`text` (Markdown) with the formatting dropped: what to send when HTML is refused."""
    return plain(markdown.render(text, DIALECT))
