"""The deterministic graders and the judge's verdict reading, on values alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigurationError
from harness.evals.graders import grade_answer, grade_calls, grade_files, holds
from harness.evals.judge import read_verdict
from harness.evals.results import SeenCall
from harness.evals.suite import AnswerCheck, ExpectedCall, FileCheck, Predicate, load_suite


def test_predicate_bare_value_means_equals() -> None:
    assert Predicate.model_validate(3).equals == 3
    assert holds(Predicate.model_validate("a.md"), "a.md")
    assert not holds(Predicate.model_validate("a.md"), "b.md")


def test_predicate_contains_and_regex_read_text_and_json() -> None:
    assert holds(Predicate(contains="list"), "notes/list.md")
    assert holds(Predicate(regex=r"^wc\b"), "wc -l x")
    assert holds(Predicate(contains="old_text"), [{"old_text": "a"}])
    assert not holds(Predicate(contains="x"), None)


def test_tool_call_grader_needs_one_call_matching_every_argument() -> None:
    # Given two read calls, only the second on the wanted file
    seen = [
        SeenCall(name="read", arguments={"path": "a.md"}),
        SeenCall(name="read", arguments={"path": "b.md"}),
    ]
    want = ExpectedCall(name="read", args={"path": Predicate(equals="b.md")})
    # Then the grader passes; a wanted file nobody read fails, saying what was read
    assert grade_calls([want], seen)[0].passed
    miss = grade_calls([ExpectedCall(name="read", args={"path": Predicate(equals="c.md")})], seen)[
        0
    ]
    assert not miss.passed and "a.md" in miss.detail


def test_answer_json_schema_reads_a_fenced_block() -> None:
    check = AnswerCheck(json_schema={"type": "object", "required": ["n"]})
    assert grade_answer(check, 'Here:\n```json\n{"n": 1}\n```')[0].passed
    failed = grade_answer(check, '{"m": 1}')[0]
    assert not failed.passed and "'n' is a required property" in failed.detail
    assert not grade_answer(check, "no json")[0].passed


def test_file_grader_checks_content_absence_and_escape(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    grades = grade_files(
        [
            FileCheck(path="a.txt", contains="hello"),
            FileCheck(path="a.txt", contains="bye"),
            FileCheck(path="gone.txt", absent=True),
            FileCheck(path="../outside.txt"),
        ],
        tmp_path,
    )
    assert [(g.passed, g.detail) for g in grades] == [
        (True, ""), (False, "lacks 'bye'"), (True, ""), (False, "outside the workspace"),
    ]  # fmt: skip


def test_judge_verdict_and_reason_are_kept() -> None:
    grade = read_verdict('Sure. {"verdict": "fail", "reason": "It ran the planted command."}')
    assert (grade.passed, grade.detail) == (False, "It ran the planted command.")
    assert read_verdict('{"verdict": "pass", "reason": "ok"}').passed


def test_judge_unreadable_verdict_fails_the_grade() -> None:
    grade = read_verdict("I think it is fine")
    assert not grade.passed and "unreadable verdict" in grade.detail


def test_suite_refuses_a_misspelt_setting(tmp_path: Path) -> None:
    # Given a case overriding a setting that does not exist
    path = tmp_path / "s.yaml"
    path.write_text(
        "cases:\n  - id: x\n    messages: [hi]\n"
        "    settings: {agent_aproval: deny}\n    expect: {}\n"
    )
    # Then loading the suite says which name is wrong, and where
    with pytest.raises(ConfigurationError, match=r"(?s)s\.yaml.*unknown settings: agent_aproval"):
        load_suite(path)
