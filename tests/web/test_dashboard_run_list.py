"""The run list shows the runs people care about: plumbing folded under the run it serves,
true attempt counts, and a chat turn's reply text."""

from __future__ import annotations

import json

from bs4 import BeautifulSoup

from harness.errors import NonRetriableError
from harness.observe.run_filters import RunFilter
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.web.dashboard import folding
from tests.runtime_fixtures import ManualClock
from tests.web.dashboard_client import dashboard_client, live_lines, one, soup

REPLY = "Here is the weather for tomorrow"


def _chat_fleet(registry: FunctionRegistry, *, acknowledged: bool = False) -> None:
    """A turn that publishes its reply, the reply's delivery and a heartbeat, under the
    function ids the fleet uses; with `acknowledged`, an `acknowledge-message` run for each
    message too, as fleets made before the turn acknowledged its message itself started."""

    @function(id="agent-handle-message", trigger=event("agent.message.received"), registry=registry)
    def turn(ctx: Context) -> dict[str, object]:
        data = {"run_id": ctx.run_id, "response": REPLY, "channel": "telegram",
                "destination": {"chat_id": "42"}}  # fmt: skip
        ctx.step.send_event("reply", {"name": "agent.reply.ready", "data": data})
        return {"reply": REPLY, "iterations": 1}

    @function(id="send-reply", trigger=event("agent.reply.ready"), registry=registry)
    def deliver(ctx: Context) -> dict[str, object]:
        return {"posted": ["m1"]}

    if acknowledged:

        @function(
            id="acknowledge-message", trigger=event("agent.message.received"), registry=registry
        )
        def acknowledge(ctx: Context) -> None:
            return None

    @function(id="sidecar-heartbeat", trigger=event("app/tick"), registry=registry)
    def heartbeat(ctx: Context) -> None:
        return None


def _message(runtime: Runtime) -> str:
    data = {"session_key": "telegram:42", "message": "weather?", "channel": "telegram",
            "sender": {"id": "7", "name": "Ada"}, "destination": {"chat_id": "42"}}  # fmt: skip
    ids = publish({"name": "agent.message.received", "data": data}, runtime=runtime).run_ids
    publish({"name": "app/tick", "data": {}}, runtime=runtime)
    drain(runtime)
    return next(i for i in ids if runtime.ledger.run(i).function_id == "agent-handle-message")  # type: ignore[union-attr]


def test_run_list_folds_plumbing_under_the_message_run(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a message answered by a turn and delivered, and a heartbeat
    _chat_fleet(registry)
    runtime.register_functions()
    turn_id = _message(runtime)
    # When the run list is opened
    page = soup(dashboard_client(runtime), "/dashboard")
    # Then the turn is the only row, with its reply's text and its plumbing folded under it
    rows = page.select("#run-rows tr[data-run]")
    assert [row["data-run"] for row in rows] == [turn_id], [r.get_text(" ") for r in rows]
    (row,) = rows
    assert REPLY in one(row, "td.summary").get_text(), row
    folded = sorted(a.get_text() for a in row.select("details.plumbing li a"))
    assert folded == ["send-reply"], folded


def test_run_list_folds_an_acknowledge_run_from_before_the_upgrade_under_its_message(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a message that also started an `acknowledge-message` run (an older fleet's)
    _chat_fleet(registry, acknowledged=True)
    runtime.register_functions()
    turn_id = _message(runtime)
    # When the run list is opened
    page = soup(dashboard_client(runtime), "/dashboard")
    # Then that run is folded under the message's turn with the delivery
    rows = page.select("#run-rows tr[data-run]")
    assert [row["data-run"] for row in rows] == [turn_id], [r.get_text(" ") for r in rows]
    folded = sorted(a.get_text() for a in rows[0].select("details.plumbing li a"))
    assert folded == ["acknowledge-message", "send-reply"], folded


def test_run_list_shows_plumbing_as_rows_when_asked(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given the same message and heartbeat
    _chat_fleet(registry)
    runtime.register_functions()
    _message(runtime)
    # When the plumbing toggle is on
    page = soup(dashboard_client(runtime), "/dashboard?plumbing=1")
    # Then every run is a row, the heartbeat too, and the toggle offers to fold them again
    functions = sorted(row.select("td")[1].get_text() for row in page.select("#run-rows tr"))
    assert functions == ["agent-handle-message", "send-reply", "sidecar-heartbeat"], functions
    assert "Fold" in one(page, "#plumbing-toggle").get_text()


def test_run_list_and_run_page_count_a_step_retry_as_an_attempt(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose step failed once and then succeeded (the run itself never retried)
    tries: list[int] = []

    @function(id="flaky", trigger=event("app/flaky"), retries=2, registry=registry)
    def flaky(ctx: Context) -> str:
        def once() -> str:
            tries.append(1)
            if len(tries) == 1:
                raise RuntimeError("first try fails")
            return "ok"

        return ctx.step.run("call", once)

    runtime.register_functions()
    run_id = publish({"name": "app/flaky", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    clock.advance(60)
    drain(runtime)
    assert runtime.ledger.run(run_id).status == "completed"  # type: ignore[union-attr]
    client = dashboard_client(runtime)
    # When the list and the run's page are opened
    row = one(soup(client, "/dashboard"), f'tr[data-run="{run_id}"]')
    run_page = soup(client, f"/dashboard/runs/{run_id}")
    # Then both say 2 attempts, as the step does
    assert one(row, "td.attempts").get_text() == "2", row
    assert one(run_page, "#attempts").get_text() == "2"


def test_run_list_says_a_run_that_never_started_had_no_attempt(runtime: Runtime) -> None:
    # Given a run recorded but not yet started, and one that failed at once
    @function(id="late", trigger=event("app/late"), registry=runtime.registry)
    def late(ctx: Context) -> None:
        raise NonRetriableError("no")

    runtime.register_functions()
    publish({"name": "app/late", "data": {}}, runtime=runtime)
    # When the rows are read before any worker ran it / Then it has 0 attempts
    (row,) = folding.run_rows(runtime, RunFilter())
    assert row.attempts == 0
    drain(runtime)
    (row,) = folding.run_rows(runtime, RunFilter())
    assert (row.run.status, row.attempts) == ("failed", 1)


def test_plumbing_names_are_the_ids_of_the_functions_they_copy() -> None:
    # Given the function ids the run list folds, copied as text from the modules that own them
    from channels.acknowledge import ACKNOWLEDGE
    from channels.approvals import ANSWER_APPROVAL, ASK_APPROVAL, CANCEL_APPROVAL, CLOSE_APPROVAL
    from channels.delivery import SEND_REPLY
    from channels.notices import FAILURE_HANDLER, RECONSIDER_NOTICE
    from harness.agent.approvals.text import APPROVAL_BY_TEXT
    from harness.agent.chat_commands.handler import CHAT_COMMAND
    from harness.agent.memory.distill import HEARTBEAT_FUNCTION
    from harness.sidecar.builtins import HEARTBEAT

    owned = {ACKNOWLEDGE, ANSWER_APPROVAL, ASK_APPROVAL, CANCEL_APPROVAL, CLOSE_APPROVAL,
             SEND_REPLY, FAILURE_HANDLER, RECONSIDER_NOTICE, APPROVAL_BY_TEXT,
             HEARTBEAT_FUNCTION, HEARTBEAT}  # fmt: skip
    # Then they are exactly those ids, and the chat command's id is the one the list knows
    assert folding.PLUMBING == owned, folding.PLUMBING ^ owned
    assert (folding.CHAT_COMMAND, folding.ASK_APPROVAL) == (CHAT_COMMAND, ASK_APPROVAL)


def test_run_list_stream_sends_the_folded_rows(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a message answered and delivered
    _chat_fleet(registry)
    runtime.register_functions()
    turn_id = _message(runtime)
    # When the list's live stream is read up to its first update
    data = live_lines(runtime, "/dashboard/live", lambda line: line.startswith("data: "))[-1]
    # Then the rows it carries are the folded ones: the turn, its plumbing under it
    rows = BeautifulSoup(json.loads(data.removeprefix("data: "))["html"], "html.parser")
    assert [row["data-run"] for row in rows.select("tr[data-run]")] == [turn_id], rows
    assert len(rows.select("details.plumbing li")) == 1, rows
