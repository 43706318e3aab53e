"""Parsing a JSON body from outside: nesting is limited before the parser sees it, and strings
come out clean (`harness.text.clean_json`). Size is limited by `harness.web.body.read_body`."""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from fastapi import HTTPException, status

from harness.text import clean_json

MAX_DEPTH = 64
"""Deeper than any platform's payload, far below what the parser or the bus can take."""

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def nesting_depth(body: bytes) -> int:
    """How deep arrays and objects nest in a JSON text (strings ignored); exact for valid
    JSON, a harmless estimate for anything else."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub(b'""', body)):
        if match.group() in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def may_hold_surrogates(body: bytes) -> bool:
    """False only when parsing `body` with `json.loads` cannot yield a lone surrogate: it has
    no `\\u` escape, no byte that starts a UTF-8 encoded surrogate (0xED, which `json.loads`
    decodes with `surrogatepass`), and nothing that makes `json.loads` decode it as UTF-16 or
    UTF-32 (a NUL byte or a UTF-16 byte-order mark). A cheap scan in C, where cleaning walks
    every parsed string in Python."""
    return (
        b"\\u" in body or b"\xed" in body or b"\x00" in body
        or body.startswith((b"\xff\xfe", b"\xfe\xff"))
    )  # fmt: skip


def parse_json(body: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """The body as JSON with clean strings. Raises `HTTPException(400)` for malformed JSON,
    NaN or Infinity, or nesting deeper than `max_depth`, checked before parsing. Strings are
    cleaned only when the body could hold a lone surrogate (`may_hold_surrogates`)."""
    # Nesting can go no deeper than the brackets that open (in strings too): most bodies
    # have too few to need the exact count.
    if body.count(b"[") + body.count(b"{") > max_depth and nesting_depth(body) > max_depth:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"JSON nested more than {max_depth} levels deep"
        )
    try:
        parsed = json.loads(body, parse_constant=_reject_constant)
        return clean_json(parsed) if may_hold_surrogates(body) else parsed
    except (ValueError, RecursionError) as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"malformed JSON body: {exc}") from None
