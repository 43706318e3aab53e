"""A JSON body from outside: nesting is limited before parsing, and only nesting counts."""

from __future__ import annotations

import json

import pytest
from fastapi import HTTPException

from harness.web.json_body import MAX_DEPTH, parse_json


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
