"""Markdown from the model to Slack mrkdwn, split into messages.

`*bold*`, `_italic_`, `~strike~`, `` `code` ``, fenced code blocks, `<url|text>` links and
`> ` quotes; `&`, `<` and `>` are escaped everywhere, as Slack requires. Messages are split at
3,900 characters (Slack truncates a message's text display near 4,000 and refuses 40,000).
"""

from __future__ import annotations

from channels import chunking, markdown
from channels.markup import Span, plain, serialize

MESSAGE_LIMIT = 3900
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


class SlackMrkdwn:
    """The Slack mrkdwn `Dialect`. Markup counts toward the limit: Slack counts raw text."""

    limit = MESSAGE_LIMIT
    quote_prefix = "> "

    def escape(self, text: str) -> str:
        return text.translate(_ESCAPES)

    def text_width(self, text: str) -> int:
        return len(self.escape(text))

    def markup_width(self, markup: str) -> int:
        return len(markup)

    def bold(self) -> Span:
        return Span("*", "*")

    def italic(self) -> Span:
        return Span("_", "_")

    def strike(self) -> Span:
        return Span("~", "~")

    def code(self) -> Span:
        return Span("`", "`")

    def pre(self, language: str) -> Span:
        # Slack shows no syntax highlighting and would print the language as code.
        return Span("```\n", "\n```", literal=True)

    def link(self, href: str) -> Span | None:
        if not href or any(c in href for c in "|<> "):
            return None
        return Span(f"<{self.escape(href)}|", ">")

    def quote(self) -> Span | None:
        return None


DIALECT = SlackMrkdwn()


def to_chunks(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """`text` (Markdown) as Slack messages in mrkdwn, in order, each at most `limit` characters
    with code blocks closed and reopened across a cut. A blank text gives no chunks.
    Deterministic."""
    atoms = markdown.render(text, DIALECT)
    return [serialize(chunk, DIALECT) for chunk in chunking.split(atoms, DIALECT, limit)]


def to_mrkdwn(text: str) -> str:
    """`text` (Markdown) as one mrkdwn string, unsplit."""
    return serialize(markdown.render(text, DIALECT), DIALECT)


def to_plain_text(text: str) -> str:
    """`text` (Markdown) with the formatting dropped (still needs escaping to post)."""
    return plain(markdown.render(text, DIALECT))
