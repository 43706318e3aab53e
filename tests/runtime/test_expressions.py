"""Trigger predicates: evaluated as simpleeval would, with what makes them cheap (one
evaluator per thread, constant tuples folded, containers not walked) changing no result."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from simpleeval import EvalWithCompoundTypes

from harness.agent.approvals.text import _PREDICATE as APPROVAL_PREDICATE
from harness.runtime.expressions import evaluate_predicate


def _event(message: Any, **data: Any) -> dict[str, Any]:
    data = {"message": message, "sender": {"id": "7"}, "tags": ["a", "b"], **data}
    return {"name": "agent.message.received", "id": "e1", "ts": 1, "data": data}


def _plain(expression: str, event: dict[str, Any]) -> bool:
    """What simpleeval itself answers, with a fresh evaluator and no folding."""
    evaluator = EvalWithCompoundTypes(names={"event": event}, functions={"len": len, "str": str})
    try:
        return bool(evaluator.eval(expression))
    except Exception:
        return False


EXPRESSIONS = [
    APPROVAL_PREDICATE,
    "event.data.message in ('hi', 'hello', ('nested', 1))",
    "event.data.message in ['hi', 'hello']",
    "(1, 2) == (1, 2) and event.data.sender.id == '7'",
    "event.data.tags == ['a', 'b']",
    "event.data.tags == ('a', 'b')",
    "len(event.data.tags) > 1",
    "event.data.missing == 1",
    "event.data.sender.__class__ is not None",
    "str(event.data.message).upper() == 'YES'",
    "{'k': event.data.message}['k'] == 'yes'",
]
EVENTS = [_event("yes"), _event("Yes!"), _event("hi"), _event(("nested", 1)), _event(None),
          _event(42), _event("no", tags=["a"])]  # fmt: skip


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_a_predicate_answers_what_simpleeval_answers(expression: str) -> None:
    for event in EVENTS:
        assert evaluate_predicate(expression, event) is _plain(expression, event), (
            expression, event["data"]["message"]
        )  # fmt: skip


def test_the_approval_predicate_matches_a_typed_yes_only() -> None:
    assert evaluate_predicate(APPROVAL_PREDICATE, _event(" Yes! "))
    assert not evaluate_predicate(APPROVAL_PREDICATE, _event("yes please"))


def test_dunder_attributes_and_forbidden_calls_stay_refused() -> None:
    event = _event("x")
    assert not evaluate_predicate("event.data.__class__.__name__ == 'dict'", event)
    assert not evaluate_predicate("str.__mro__ != 0", event)
    assert not evaluate_predicate("type(event) == dict", event)


def test_threads_evaluating_at_once_each_see_their_own_event() -> None:
    # Given many events, half of which match, and threads switched as often as Python can
    events = [_event("yes" if i % 2 else f"no {i}") for i in range(2000)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    # When eight threads evaluate the same predicate over them at once
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda e: evaluate_predicate(APPROVAL_PREDICATE, e), events))
    finally:
        sys.setswitchinterval(interval)

    # Then every answer is the one for its own event
    assert results == [i % 2 == 1 for i in range(2000)]
