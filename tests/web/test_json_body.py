"""A JSON body from outside: nesting is limited before parsing, and only nesting counts; strings
come out without lone surrogates, cleaned only when the body could hold one."""

from __future__ import annotations

import json

import pytest
from fastapi import HTTPException

from harness.web.json_body import MAX_DEPTH, may_hold_surrogates, parse_json


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_nesting_up_to_the_limit_is_parsed() -> None:
    assert parse_json(_nested(MAX_DEPTH)) is not None


def test_nesting_past_the_limit_is_refused_before_parsing() -> None:
    with pytest.raises(HTTPException) as refused:
        parse_json(_nested(MAX_DEPTH + 1))

    assert refused.value.status_code == 400
    assert "nested more than" in str(refused.value.detail)


def test_brackets_in_strings_and_side_by_side_do_not_count_as_nesting() -> None:
    body = {"text": "[{" * 200, "items": [[1], [2]] * 100}  # many brackets, 3 levels deep

    assert parse_json(json.dumps(body).encode()) == body


def test_a_plain_utf8_body_needs_no_cleaning() -> None:
    # Given a webhook body with non-ASCII text but no escape and no encoded surrogate
    body = json.dumps({"message": {"text": "grüß dich 👋"}}, ensure_ascii=False).encode()

    # When it is checked, then it is known to hold no lone surrogate
    assert may_hold_surrogates(body) is False


@pytest.mark.parametrize(
    ("label", "body"),
    [
        ("an escaped lone surrogate", b'{"t": "a\\ud800b"}'),
        ("an upper-case escape", b'{"t": "a\\uDFFFb"}'),
        ("UTF-8 bytes of a surrogate", b'{"t": "a\xed\xa0\x80b"}'),
        ("a UTF-16 body", '{"t": "a"}'.encode("utf-16-le") + b"\x00\xd8"),
        ("a UTF-16 body with its mark", '{"t": "ab"}'.encode("utf-16")),
    ],
)
def test_a_body_that_may_hold_a_lone_surrogate_is_cleaned(label: str, body: bytes) -> None:
    # Given a body that can decode to a lone surrogate
    assert may_hold_surrogates(body), label

    # When it is parsed (when it parses at all), then no lone surrogate comes out
    try:
        parsed = parse_json(body)
    except HTTPException:
        return
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(parsed, ensure_ascii=False)), (
        label
    )


def test_a_lone_surrogate_in_utf8_bytes_becomes_the_replacement_character() -> None:
    # Given a body whose text holds the UTF-8 encoding of a lone surrogate
    body = b'{"t": "a\xed\xa0\x80b"}'

    # When it is parsed, then the surrogate is replaced, as an escaped one is
    assert parse_json(body) == {"t": "a\ufffdb"}
    assert parse_json(b'{"t": "a\\ud800b"}') == {"t": "a\ufffdb"}
