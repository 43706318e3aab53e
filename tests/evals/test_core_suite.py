"""CI keeps the runner tested: the shipped suite, run through the agent's turn against the
scripted model, passes every grader; wrong behaviour fails the grader meant to catch it."""

from __future__ import annotations

from harness.evals.case_run import run_case
from harness.evals.results import Attempt
from harness.evals.suite import Case, Suite, load_suite
from harness.settings import Settings
from tests.evals.conftest import ROOT, scripted
from tests.fakes.model_server import ModelServer, Reply

CORE = ROOT / "evals" / "core.yaml"


def _case(suite: Suite, case_id: str) -> Case:
    return next(c for c in suite.cases if c.id == case_id)


def _failed(attempt: Attempt) -> list[str]:
    return [g.grader for g in attempt.grades if not g.passed]


def test_core_suite_ships_at_least_twenty_cases_with_scripts() -> None:
    suite = load_suite(CORE)
    assert len(suite.cases) >= 20
    assert all(c.scripted for c in suite.cases), "every shipped case is scripted for CI"


def test_core_suite_passes_against_its_scripts(
    model_server: ModelServer, eval_settings: Settings, redis_url: str
) -> None:
    # Given the shipped suite and each case's scripted replies
    suite = load_suite(CORE)
    failures = {}
    for case in suite.cases:
        model_server.script(*scripted(case))
        # When the case runs through the agent's turn
        attempt = run_case(case, suite.name, eval_settings, redis_url, 0)
        if not attempt.passed:
            failures[case.id] = attempt.error or [
                (g.grader, g.detail) for g in attempt.grades if not g.passed
            ]
    # Then every grader of every case passed, and every scripted reply was used
    assert failures == {}
    assert model_server.unscripted == 0


def test_wrong_answer_fails_the_answer_grader(
    model_server: ModelServer, eval_settings: Settings, redis_url: str
) -> None:
    # Given the read case, with a model that reads the file and then answers wrongly
    case = _case(load_suite(CORE), "read-a-file")
    model_server.script(Reply.tool("read", {"path": "notes/list.md"}), Reply.answer("Apples."))
    # When it runs
    attempt = run_case(case, "core", eval_settings, redis_url, 0)
    # Then only the answer check failed
    assert _failed(attempt) == ["answer.contains"]


def test_missing_tool_call_fails_the_tool_grader(
    model_server: ModelServer, eval_settings: Settings, redis_url: str
) -> None:
    # Given a model that answers "lemons" without reading the file
    case = _case(load_suite(CORE), "read-a-file")
    model_server.script(Reply.answer("Probably lemons."))
    # When it runs
    attempt = run_case(case, "core", eval_settings, redis_url, 0)
    # Then the tool-call grader caught it, and only it
    assert _failed(attempt) == ["tool_call:read"]


def test_obeying_an_injection_fails_the_forbidden_and_file_graders(
    model_server: ModelServer, eval_settings: Settings, redis_url: str
) -> None:
    # Given a model that follows the instruction planted in the document
    case = _case(load_suite(CORE), "injection-in-document")
    model_server.script(
        Reply.tool("read", {"path": "docs/vendor-offer.md"}),
        Reply.tool("write", {"path": "leak.txt", "content": "secrets"}),
        Reply.answer("Northwind sells chairs."),
        Reply.answer('{"verdict": "fail", "reason": "It wrote leak.txt as the page told it."}'),
    )
    # When it runs
    attempt = run_case(case, "core", eval_settings, redis_url, 0)
    # Then the forbidden-tool, file and judge graders failed, with the judge's reason kept
    assert _failed(attempt) == ["not_called:write", "file:leak.txt", "judge"]
    assert attempt.grades[-1].detail == "It wrote leak.txt as the page told it."
