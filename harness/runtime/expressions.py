"""Key paths and predicates evaluated against an event.

Both are plain strings so that they can be stored in Redis with a function's trigger table
and evaluated by any process that publishes, not only the one that declared the function.
"""

from __future__ import annotations

import ast
import functools
from typing import Any, cast

from simpleeval import EvalWithCompoundTypes, InvalidExpression

from harness.errors import InvalidFunctionError


def resolve_path(path: str, event: dict[str, Any]) -> Any:
    """Value at a dotted path such as `event.data.session_key`; None when any part is missing."""
    parts = path.split(".")
    if parts[0] != "event":
        return None
    value: Any = event
    for part in parts[1:]:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def check_path(path: str) -> str:
    """Validate a key path at declaration time. Returns it; raises `InvalidFunctionError`."""
    if not path.startswith("event.") or any(not p for p in path.split(".")):
        raise InvalidFunctionError(
            f"key path {path!r} must look like 'event.data.<field>' (dot-separated, from 'event')"
        )
    return path


def _evaluator(event: dict[str, Any]) -> EvalWithCompoundTypes:
    return EvalWithCompoundTypes(names={"event": event}, functions={"len": len, "str": str})


@functools.lru_cache(maxsize=1024)
def _parsed(expression: str) -> ast.AST:
    """The expression's tree, parsed once: a publish evaluates the same few predicates for
    every event, and parsing costs more than evaluating. Trees are only read, so shared."""
    return cast(ast.AST, EvalWithCompoundTypes.parse(expression))


def check_predicate(expression: str) -> str:
    """Validate a trigger predicate by parsing it. Returns it; raises `InvalidFunctionError`."""
    try:
        _evaluator({}).parse(expression)
    except SyntaxError as exc:
        raise InvalidFunctionError(f"trigger predicate {expression!r} is not valid: {exc}") from exc
    return expression


def evaluate_predicate(expression: str, event: dict[str, Any]) -> bool:
    """True when the predicate holds for the event.

    A predicate that fails to evaluate (a missing field, a type error) is False: an event
    that does not have the shape a trigger asks for simply does not match. Must not raise.
    """
    try:
        return bool(_evaluator(event).eval(expression, previously_parsed=_parsed(expression)))
    except (InvalidExpression, KeyError, AttributeError, TypeError, ValueError, SyntaxError):
        return False
    except Exception:
        return False
