"""The splitter shared by the platform formatters."""

from __future__ import annotations

import random
import re

import pytest

from channels import chunking, markdown
from channels.markup import Close, Open, Span, plain, serialize
from channels.slack import format as slack_format
from channels.telegram import format as telegram_format
from tests.fakes.telegram_api import parse_html, utf16_length

BOLD = Span("[", "]")
CODE = Span("{", "}", literal=True)


class Brackets:
    """A toy dialect whose markup counts, to check the splitter's arithmetic."""

    limit = 20
    quote_prefix = ""

    def escape(self, text: str) -> str:
        return text

    def text_width(self, text: str) -> int:
        return len(text)

    def markup_width(self, markup: str) -> int:
        return len(markup)

    def bold(self) -> Span:
        return BOLD

    def italic(self) -> Span:
        return BOLD

    def strike(self) -> Span:
        return BOLD

    def code(self) -> Span:
        return CODE

    def pre(self, language: str) -> Span:
        return CODE

    def link(self, href: str) -> Span | None:
        return None

    def quote(self) -> Span | None:
        return None


def split(atoms: list[str | Open | Close], limit: int = 20) -> list[str]:
    return [serialize(chunk, Brackets()) for chunk in chunking.split(atoms, Brackets(), limit)]


def test_paragraph_break_is_preferred_to_a_later_line_break() -> None:
    assert split(["aaaaaaaaaaaa\n\nbbbb\ncccccccccc"]) == ["aaaaaaaaaaaa", "bbbb\ncccccccccc"]


def test_line_break_is_preferred_to_a_later_space() -> None:
    assert split(["aaaaaaaaaaaa\nbbbb cccccccccc"]) == ["aaaaaaaaaaaa", "bbbb cccccccccc"]


def test_a_cut_leaving_the_chunk_under_half_full_is_avoided() -> None:
    # The paragraph break at 3 would leave a tiny chunk; the space at 15 is used instead.
    assert split(["aaa\n\nbbbbbbbbbb ccccccccccc"]) == ["aaa\n\nbbbbbbbbbb", "ccccccccccc"]


def test_open_span_is_closed_and_reopened_and_its_markup_counts() -> None:
    chunks = split([Open(BOLD), "one two three four five six", Close(BOLD)])

    assert chunks == ["[one two three four]", "[five six]"]
    assert all(len(chunk) <= 20 for chunk in chunks)


def test_whitespace_at_a_cut_inside_a_literal_span_is_kept() -> None:
    chunks = split([Open(CODE), "line one\n  line two\n  line three", Close(CODE)], limit=16)

    assert chunks == ["{line one}", "{  line two}", "{  line three}"]


def test_span_without_text_is_dropped() -> None:
    assert split(["text ", Open(BOLD), Close(BOLD)]) == ["text"]


def random_markdown(rng: random.Random) -> str:
    words = ["alpha", "beta<", "&gamma", "😀", "ünï", "x" * 300, "delta", "a>b"]
    blocks = []
    for _ in range(rng.randint(5, 40)):
        kind = rng.choice(["para", "bold", "code", "list", "quote", "link"])
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 400)))
        if kind == "bold":
            text = f"**{text}** tail"
        elif kind == "code":
            text = "```py\n" + text.replace(" ", "\n") + "\n```"
        elif kind == "list":
            text = "\n".join(f"- {w}" for w in text.split()[:50])
        elif kind == "quote":
            text = "> " + text
        elif kind == "link":
            text = f"see [{text[:500]}](https://example.com/{rng.randint(0, 9)})"
        blocks.append(text)
    return "\n\n".join(blocks)


@pytest.mark.parametrize("seed", range(8))
def test_random_documents_split_into_valid_chunks_without_losing_text(seed: int) -> None:
    markdown = random_markdown(random.Random(seed))

    telegram = telegram_format.to_chunks(markdown)
    slack = slack_format.to_chunks(markdown)

    squeeze = re.compile(r"\s+")
    expected = squeeze.sub("", telegram_format.to_plain_text(markdown))
    shown = [parse_html(chunk.html) for chunk in telegram]
    assert all(0 < utf16_length(text) <= telegram_format.MESSAGE_LIMIT for text in shown)
    assert squeeze.sub("", "".join(shown)) == expected
    assert all(len(chunk) <= slack_format.MESSAGE_LIMIT for chunk in slack)
    assert all(chunk.count("```") % 2 == 0 for chunk in slack)


def test_plain_of_a_chunk_matches_what_telegram_shows() -> None:
    atoms = markdown.render("**a < b** and `c & d`", telegram_format.DIALECT)

    assert plain(atoms) == parse_html(serialize(atoms, telegram_format.DIALECT))
