from __future__ import annotations

from harness.tools.html_text import html_to_text


def test_html_to_text_keeps_preformatted_whitespace() -> None:
    _, text = html_to_text("<p>Example:</p><pre>def f():\n    return 1\n</pre>")

    assert text == "Example:\n\ndef f():\n    return 1"


def test_html_to_text_handles_deep_nesting() -> None:
    _, text = html_to_text("<div>" * 5000 + "deep" + "</div>" * 5000)

    assert text == "deep"


def test_html_to_text_uses_the_declared_charset() -> None:
    title, text = html_to_text(b"<title>Caf\xe9</title><p>cr\xe8me</p>", "latin-1")

    assert (title, text) == ("Café", "crème")
