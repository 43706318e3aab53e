"""Key paths and predicates evaluated against an event.

Both are plain strings so that they can be stored in Redis with a function's trigger table
and evaluated by any process that publishes, not only the one that declared the function.
"""

from __future__ import annotations

import ast
import functools
import threading
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


_CONTAINERS = (dict, list, tuple, set, frozenset)


class _PredicateEvaluator(EvalWithCompoundTypes):  # type: ignore[misc]
    """simpleeval's evaluator, checking each value a predicate produces for forbidden
    functions and modules, but not walking the members of a container. simpleeval walks
    every container it produces, so `event.data.x` walked the whole event twice per
    predicate (most of its cost). A predicate's containers hold only the event's JSON or
    values already checked when they were produced, and its result is only tested for truth,
    so the walk cannot find anything."""

    def _check_disallowed_items(self, item: Any) -> None:
        if type(item) not in _CONTAINERS:
            super()._check_disallowed_items(item)


class _Evaluators(threading.local):
    """One evaluator per thread (building one costs more than most evaluations); only its
    `names` change between evaluations."""

    def __init__(self) -> None:
        self.evaluator = _PredicateEvaluator(names={}, functions={"len": len, "str": str})


_evaluators = _Evaluators()


def _evaluator(event: dict[str, Any]) -> EvalWithCompoundTypes:
    evaluator = _evaluators.evaluator
    evaluator.names = {"event": event}
    return evaluator


class _FoldConstantTuples(ast.NodeTransformer):
    """Replaces a tuple of constants (`x in ('yes', 'y', ...)`) by one constant, so that it is
    not built again, member by member, on every evaluation."""

    def visit_Tuple(self, node: ast.Tuple) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and all(isinstance(e, ast.Constant) for e in node.elts):
            values: Any = tuple(cast(ast.Constant, e).value for e in node.elts)
            return ast.copy_location(ast.Constant(value=values), node)
        return node


@functools.lru_cache(maxsize=1024)
def _parsed(expression: str) -> ast.AST:
    """The expression's tree, parsed once: a publish evaluates the same few predicates for
    every event, and parsing costs more than evaluating. Trees are only read, so shared."""
    tree = cast(ast.AST, EvalWithCompoundTypes.parse(expression))
    return cast(ast.AST, _FoldConstantTuples().visit(tree))


def check_predicate(expression: str) -> str:
    """Validate a trigger predicate by parsing it. Returns it; raises `InvalidFunctionError`."""
    try:
        EvalWithCompoundTypes.parse(expression)
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
