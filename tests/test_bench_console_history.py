"""The screenshots' made-up history (`bench.console_history`) has what each picture shows:
chats with a transcript, a tool call and an approval; a report with a retry, a sleep and a
sub-run; a failed report with its key masked; a pending approval; the same times each build."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

import harness.agent.session as session_module
from bench.console_history import LEAKED, Clock, History, build
from harness.agent.deps import set_agent_deps
from harness.observe.child_runs import child_runs
from harness.observe.pending_work import pending_approvals
from harness.observe.run_views import run_view, step_views
from harness.web.dashboard.conversations import chats, transcript
from tests.fakes.model_server import ModelServer
from tests.web.dashboard_client import dashboard_client, soup


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    with ModelServer() as model:
        yield build(Clock(), model, tmp_path_factory.mktemp("history"))
    set_agent_deps(None)


def test_history_has_chats_and_a_transcript_with_a_tool_call_and_an_answered_approval(
    history: History,
) -> None:
    # Given the history / When its chats and the featured transcript are read
    listed = [chat.session_key for chat in chats(history.runtime)]
    items = transcript(history.runtime, history.state, history.chat).items
    # Then four chats are listed, and the featured one has a person's message, a tool call
    # with its result, and an approval given by Ann
    assert len(listed) == 4 and history.chat in listed, listed
    assert [item.kind for item in items][:2] == ["user", "assistant"], items
    calls = [call for item in items for call in item.calls]
    assert [call.name for call in calls] == ["ls", "write"], calls
    assert "todo.md" in calls[0].result, calls[0]
    (approval,) = [item for item in items if item.kind == "approval"]
    assert (approval.state, approval.by) == ("approve", "Ann"), approval


def test_history_report_retried_a_step_slept_and_waited_for_a_sub_run(history: History) -> None:
    # Given the report that finished / When its steps are read
    record = history.runtime.ledger.run(history.report)
    assert record is not None and record.status == "completed", record
    run = run_view(record)
    steps = {step.key: step for step in step_views(run, history.runtime.ledger.journal(run.id))}
    # Then its fetch took two tries, it slept, and its summary ran as a child run
    assert steps["fetch:0"].attempts == 2, steps["fetch:0"]
    assert (steps["cool-down:0"].kind, steps["summarise:0"].kind) == ("sleep", "invoke"), steps
    (child,) = child_runs(history.runtime, history.report)
    assert child.step == "summarise:0", child


def test_history_failed_report_shows_its_error_with_the_key_masked(history: History) -> None:
    # Given the report that failed / When its page is opened
    client = dashboard_client(history.runtime, state=history.state)
    page = soup(client, f"/dashboard/runs/{history.failed}").get_text()
    # Then it failed on the warehouse, and the key is masked
    assert "warehouse refused the key" in page and LEAKED not in page, page[:500]


def test_history_leaves_one_approval_waiting(history: History) -> None:
    (waiting,) = pending_approvals(history.runtime)
    assert waiting.session == "slack:C07OPS", waiting


def test_history_times_come_from_the_made_up_clock(history: History) -> None:
    # Given the featured transcript / Then its first message is at the clock's fixed time
    first = transcript(history.runtime, history.state, history.chat).items[0]
    assert first.ts_ms == 1_800_000_000_000 - 1_800_000, first


def test_history_build_restores_the_session_clock(history: History) -> None:
    # Given the history was built / Then the session store reads the real time again
    assert session_module.datetime is datetime  # type: ignore[attr-defined]
