"""Markdown to Telegram HTML, and splitting into messages Telegram accepts."""

from __future__ import annotations

import re

import pytest

from channels.telegram.format import MESSAGE_LIMIT, to_chunks, to_html, to_plain_text
from tests.fakes.telegram_api import parse_html, utf16_length

ALLOWED = {"b", "i", "u", "s", "code", "pre", "a", "blockquote"}


def accepted(html: str) -> str:
    """The visible text Telegram would show; fails the test if Telegram would refuse it."""
    text = parse_html(html)
    assert text.strip(), "Telegram refuses empty messages"
    assert utf16_length(text) <= MESSAGE_LIMIT, f"{utf16_length(text)} UTF-16 units is too long"
    tags = set(re.findall(r"</?([a-z-]+)", html))
    assert tags <= ALLOWED, f"disallowed tags {tags - ALLOWED}"
    return text


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
        ("*italic* and _italic_", "<i>italic</i> and <i>italic</i>"),
        ("~~gone~~", "<s>gone</s>"),
        (
            "[Example](https://example.com/?a=1&b=2)",
            '<a href="https://example.com/?a=1&amp;b=2">Example</a>',
        ),
        ("use `a < b && c`", "use <code>a &lt; b &amp;&amp; c</code>"),
        ("# Title\n\ntext", "<b>Title</b>\n\ntext"),
        ("- one\n- two", "• one\n• two"),
        ("1. one\n2. two", "1. one\n2. two"),
        ("> wise words", "<blockquote>wise words</blockquote>"),
        ("1 < 2 & 3 > 2", "1 &lt; 2 &amp; 3 &gt; 2"),
        ("<b>raw html</b>", "&lt;b&gt;raw html&lt;/b&gt;"),
        ("[relative](docs/x.md)", "relative"),
    ],
    ids=[
        "bold",
        "italic",
        "strike",
        "link",
        "inline-code",
        "heading",
        "bullets",
        "numbers",
        "quote",
        "escaping",
        "raw-html",
        "relative-link",
    ],
)
def test_markdown_becomes_telegram_html(markdown: str, html: str) -> None:
    assert to_html(markdown) == html
    accepted(html)


def test_code_block_keeps_its_content_escaped_with_the_language() -> None:
    markdown = "```python\nif a < b:\n    print('&')\n```"

    html = to_html(markdown)

    assert html == (
        "<pre><code class=\"language-python\">if a &lt; b:\n    print('&amp;')</code></pre>"
    )
    assert accepted(html) == "if a < b:\n    print('&')"


def test_nested_list_is_indented() -> None:
    assert to_html("- a\n  - b\n- c") == "• a\n   • b\n• c"


def test_plain_text_fallback_drops_formatting_but_keeps_the_text() -> None:
    assert to_plain_text("**Hi** `x<y` [site](https://e.com)") == "Hi x<y site"


def test_short_reply_is_one_chunk() -> None:
    chunks = to_chunks("Hello **there**")

    assert [c.html for c in chunks] == ["Hello <b>there</b>"]
    assert chunks[0].plain == "Hello there"


def test_blank_reply_has_no_chunks() -> None:
    assert to_chunks("  \n\n ") == []


def test_long_reply_splits_on_paragraphs() -> None:
    paragraphs = [f"Paragraph {n}: " + "word " * 300 for n in range(6)]

    chunks = to_chunks("\n\n".join(paragraphs))

    assert len(chunks) > 1
    for chunk in chunks:
        text = accepted(chunk.html)
        assert text.startswith("Paragraph "), "each chunk should start on a paragraph"


def test_long_code_block_is_closed_and_reopened_across_chunks() -> None:
    # Given a code block far longer than one message, with `<` and `&` inside
    code = "\n".join(f"if x{n} < limit && ok: total += {n}" for n in range(600))
    markdown = f"Here is the code:\n\n```python\n{code}\n```\n\nThat's all."

    # When it is split
    chunks = to_chunks(markdown)

    # Then every chunk is valid HTML with the code block reopened, and no line is lost
    assert len(chunks) >= 5
    for chunk in chunks[1:-1]:
        assert chunk.html.startswith('<pre><code class="language-python">')
        assert chunk.html.endswith("</code></pre>")
    texts = [accepted(chunk.html) for chunk in chunks]
    rejoined = "\n".join(texts)
    for n in range(600):
        assert f"if x{n} < limit && ok: total += {n}" in rejoined


def test_bold_span_across_a_cut_is_closed_and_reopened() -> None:
    chunks = to_chunks("**" + ("bold words " * 800).strip() + "**")

    assert len(chunks) == 3
    for chunk in chunks:
        assert chunk.html.startswith("<b>") and chunk.html.endswith("</b>")
        accepted(chunk.html)


def test_long_line_without_spaces_is_cut_hard() -> None:
    chunks = to_chunks("x" * 10_000)

    assert [utf16_length(accepted(c.html)) for c in chunks] == [4096, 4096, 1808]


def test_long_link_text_without_spaces_stays_a_link_in_every_chunk() -> None:
    chunks = to_chunks("[" + "y" * 5000 + "](https://example.com)")

    assert len(chunks) == 2
    for chunk in chunks:
        assert chunk.html.startswith('<a href="https://example.com">')
        accepted(chunk.html)


def test_length_is_counted_in_utf16_code_units() -> None:
    # Given 3,000 emoji: 3,000 code points, but 6,000 UTF-16 units
    chunks = to_chunks("😀" * 3000)

    lengths = [utf16_length(accepted(c.html)) for c in chunks]

    assert lengths == [4096, 1904]


def test_escaped_characters_count_once() -> None:
    # `&lt;` is four characters of HTML but one character to Telegram
    chunks = to_chunks("<" * 4096)

    assert len(chunks) == 1
    assert accepted(chunks[0].html) == "<" * 4096


def test_splitting_is_deterministic() -> None:
    markdown = "\n\n".join(f"**{n}** " + "lorem ipsum " * 200 for n in range(10))

    assert to_chunks(markdown) == to_chunks(markdown)
