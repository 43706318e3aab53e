"""The deterministic graders: expected tool calls, final-answer checks, workspace files.
Each returns `Grade`s and never raises on what the agent did (a bad regex in the suite does
raise `re.error`: that is the suite's bug)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema

from harness.evals.results import Grade, SeenCall
from harness.evals.suite import AnswerCheck, ExpectedCall, FileCheck, Predicate

_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def holds(predicate: Predicate, value: Any) -> bool:
    """Whether `value` passes `predicate`; a missing value (None) passes only `equals: null`."""
    text = value if isinstance(value, str) else json.dumps(value)
    if predicate.contains is not None:
        return value is not None and predicate.contains in text
    if predicate.regex is not None:
        return value is not None and re.search(predicate.regex, text) is not None
    return bool(value == predicate.equals)


def grade_calls(expected: list[ExpectedCall], seen: list[SeenCall]) -> list[Grade]:
    """One grade per expected call: passed when some call of that name satisfies every
    argument predicate."""
    grades = []
    for want in expected:
        named = [c for c in seen if c.name == want.name]
        ok = any(all(holds(p, c.arguments.get(k)) for k, p in want.args.items()) for c in named)
        detail = "" if ok else _calls_miss(want, named, seen)
        grades.append(Grade(grader=f"tool_call:{want.name}", passed=ok, detail=detail))
    return grades


def _calls_miss(want: ExpectedCall, named: list[SeenCall], seen: list[SeenCall]) -> str:
    if not named:
        return f"no {want.name} call (calls: {[c.name for c in seen] or 'none'})"
    return f"no {want.name} call matched {_dump(want.args)}; got {[c.arguments for c in named]}"


def grade_forbidden(names: list[str], seen: list[SeenCall]) -> list[Grade]:
    """One grade per forbidden tool: passed when the agent never called it."""
    called = {c.name for c in seen}
    return [
        Grade(
            grader=f"not_called:{name}",
            passed=name not in called,
            detail=f"{name} was called" if name in called else "",
        )
        for name in names
    ]


def grade_answer(check: AnswerCheck, answer: str) -> list[Grade]:
    """One grade per check of the final answer."""
    grades = [
        Grade(grader="answer.contains", passed=s in answer, detail=f"missing {s!r}")
        for s in check.contains
    ]
    grades += [
        Grade(grader="answer.not_contains", passed=s not in answer, detail=f"contains {s!r}")
        for s in check.not_contains
    ]
    grades += [
        Grade(grader="answer.regex", passed=re.search(r, answer) is not None, detail=f"no /{r}/")
        for r in check.regex
    ]
    if check.json_schema is not None:
        grades.append(_grade_schema(check.json_schema, answer))
    return [g if not g.passed else g.model_copy(update={"detail": ""}) for g in grades]


def _grade_schema(schema: dict[str, Any], answer: str) -> Grade:
    fenced = _FENCED.search(answer)
    try:
        value = json.loads(fenced.group(1) if fenced else answer)
        jsonschema.validate(value, schema)
    except ValueError as exc:
        return Grade(grader="answer.json_schema", passed=False, detail=f"not JSON: {exc}")
    except jsonschema.ValidationError as exc:
        return Grade(grader="answer.json_schema", passed=False, detail=exc.message)
    return Grade(grader="answer.json_schema", passed=True)


def grade_files(checks: list[FileCheck], workspace: Path) -> list[Grade]:
    """One grade per file check, read inside `workspace` (a path escaping it fails)."""
    grades = []
    for check in checks:
        path = (workspace / check.path).resolve()
        grader = f"file:{check.path}"
        if not path.is_relative_to(workspace.resolve()):
            grades.append(Grade(grader=grader, passed=False, detail="outside the workspace"))
        elif check.absent:
            grades.append(Grade(grader=grader, passed=not path.exists(), detail="exists"))
        elif not path.is_file():
            grades.append(Grade(grader=grader, passed=False, detail="missing"))
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
            ok = check.contains is None or check.contains in text
            grades.append(Grade(grader=grader, passed=ok, detail=f"lacks {check.contains!r}"))
    return [g if not g.passed else g.model_copy(update={"detail": ""}) for g in grades]


def _dump(args: dict[str, Predicate]) -> str:
    return json.dumps({k: p.model_dump(exclude_none=True) for k, p in args.items()})
