"""Markdown to Slack mrkdwn, and splitting into messages."""

from __future__ import annotations

import pytest

from channels.slack.format import MESSAGE_LIMIT, to_chunks, to_mrkdwn


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold**", "*bold*"),
        ("*italic*", "_italic_"),
        ("~~gone~~", "~gone~"),
        ("[Example](https://example.com/?a=1&b=2)", "<https://example.com/?a=1&amp;b=2|Example>"),
        ("use `a < b`", "use `a &lt; b`"),
        ("# Title\n\ntext", "*Title*\n\ntext"),
        ("- one\n- two", "• one\n• two"),
        ("> wise\n> words", "> wise\n> words"),
        ("1 < 2 & 3 > 2", "1 &lt; 2 &amp; 3 &gt; 2"),
        ("<!channel> hi", "&lt;!channel&gt; hi"),
    ],
    ids=[
        "bold",
        "italic",
        "strike",
        "link",
        "inline-code",
        "heading",
        "bullets",
        "quote",
        "escaping",
        "no-broadcast",
    ],
)
def test_markdown_becomes_mrkdwn(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


def test_code_block_is_kept_and_escaped_without_the_language() -> None:
    assert to_mrkdwn("```python\nif a < b:\n    pass\n```") == "```\nif a &lt; b:\n    pass\n```"


def test_long_reply_splits_within_the_limit_on_paragraphs() -> None:
    markdown = "\n\n".join(f"Part {n}. " + "word " * 250 for n in range(12))

    chunks = to_chunks(markdown)

    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk) <= MESSAGE_LIMIT
        assert chunk.startswith("Part ")


def test_long_code_block_is_closed_and_reopened_across_chunks() -> None:
    code = "\n".join(f"value_{n} = compute({n}) if ready else None" for n in range(400))

    chunks = to_chunks(f"```\n{code}\n```")

    assert len(chunks) >= 4
    for chunk in chunks:
        assert len(chunk) <= MESSAGE_LIMIT
        assert chunk.startswith("```\n") and chunk.endswith("\n```"), chunk[-20:]
        assert chunk.count("```") == 2
    body = "\n".join(chunk[4:-4] for chunk in chunks)
    assert body == code


def test_escaping_counts_toward_the_limit() -> None:
    chunks = to_chunks("&" * 4000)

    assert all(len(chunk) <= MESSAGE_LIMIT for chunk in chunks)
    assert "".join(chunks) == "&amp;" * 4000


def test_long_line_without_spaces_is_cut_hard() -> None:
    chunks = to_chunks("x" * 9000)

    assert [len(chunk) for chunk in chunks] == [3900, 3900, 1200]
