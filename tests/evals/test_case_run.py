"""One case through the fleet path against the scripted model: what it records and grades."""

from __future__ import annotations

from harness.evals.case_run import run_case
from harness.evals.suite import Case
from harness.settings import Settings
from tests.evals.conftest import scripted
from tests.fakes.model_server import ModelServer

READ_CASE = Case.model_validate(
    {
        "id": "read-a-note",
        "messages": ["What is on my shopping list in notes/list.md?"],
        "workspace": {"notes/list.md": "- oat milk\n- lemons\n"},
        "expect": {
            "tool_calls": [{"name": "read", "args": {"path": {"contains": "list.md"}}}],
            "answer": {"contains": ["lemons"]},
            "files": [{"path": "notes/list.md", "contains": "oat milk"}],
        },
        "scripted": [
            {"tool": "read", "args": {"path": "notes/list.md"}},
            {"answer": "Oat milk and lemons."},
        ],
    }
)


def test_case_run_records_calls_answer_and_tokens(
    model_server: ModelServer, eval_settings: Settings, redis_url: str
) -> None:
    # Given a case whose scripted model reads the note and answers
    model_server.script(*scripted(READ_CASE))
    # When it runs through the agent's turn
    attempt = run_case(READ_CASE, "unit", eval_settings, redis_url, 0)
    # Then every grader passed, and the call, answer and tokens were recorded
    assert attempt.error is None, attempt.error
    assert [g.passed for g in attempt.grades] == [True, True, True], attempt.grades
    assert attempt.transcript.tool_calls[0].name == "read"
    assert attempt.transcript.answer == "Oat milk and lemons."
    assert attempt.transcript.usage.calls == 2
    assert attempt.transcript.usage.input_tokens == 200
