"""The console's actions: POST forms with the sign-in's CSRF token, one flash message and a
redirect each; an unknown id is a 4xx page."""

from __future__ import annotations

from bs4 import BeautifulSoup

from channels.approvals import answer_approval
from harness.observe.pending_work import pending_approvals
from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.web.console_client import csrf, signed_in, soup


def _waiting_run(runtime: Runtime, registry: FunctionRegistry) -> str:
    @function(id="holds", trigger=event("app/hold"), retries=0, registry=registry)
    def holds(ctx: Context) -> str:
        ctx.step.run("first", lambda: 1)
        ctx.step.run("second", lambda: 2)
        ctx.step.wait_for_event("go", event="app/go", timeout="1h")
        return "done"

    runtime.register_functions()
    run_id = publish({"name": "app/hold", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    return run_id


def test_cancel_form_stops_a_live_run_with_a_flash_message(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run waiting for an event, and its actions page open
    run_id = _waiting_run(runtime, registry)
    client = signed_in(runtime)
    token = csrf(client, f"/dashboard/runs/{run_id}/actions")
    # When Cancel is pressed
    response = client.post(f"/dashboard/runs/{run_id}/cancel", data={"csrf": token})
    # Then the browser goes back to the run, which is cancelled once a worker gets to it
    assert response.status_code == 303 and response.headers["location"] == (
        f"/dashboard/runs/{run_id}"
    ), response.text
    drain(runtime)
    assert runtime.ledger.run(run_id).status == "cancelled"  # type: ignore[union-attr]
    # And the next page shows the flash message once
    flash = soup(client, "/dashboard/actions").select_one("#flash")
    assert flash is not None and "will stop at its next step" in flash.text
    assert soup(client, "/dashboard/actions").select_one("#flash") is None


def test_actions_refuse_a_form_without_this_sign_ins_token(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a live run and a signed-in operator
    run_id = _waiting_run(runtime, registry)
    client = signed_in(runtime)
    # When a form comes without the token, or with another's, Then 403 and nothing changes
    for data in ({}, {"csrf": "0" * 64}):
        response = client.post(f"/dashboard/runs/{run_id}/cancel", data=data)
        assert response.status_code == 403, response.text
    assert runtime.ledger.run(run_id).status == "waiting"  # type: ignore[union-attr]
    # And a client that is not signed in is sent to the sign-in form
    anonymous = signed_in(runtime)
    anonymous.cookies.clear()
    response = anonymous.post(f"/dashboard/runs/{run_id}/cancel", data={})
    assert response.status_code == 303 and response.headers["location"] == "/dashboard/login"


def test_actions_answer_a_bad_id_with_a_404_page(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a signed-in operator with a valid token (from a run's actions page)
    client = signed_in(runtime)
    token = csrf(client, f"/dashboard/runs/{_waiting_run(runtime, registry)}/actions")
    # When each action names something that does not exist, Then 404, never 500
    for path, data in (
        ("/dashboard/runs/nope/cancel", {}),
        ("/dashboard/runs/nope/fork", {}),
        ("/dashboard/undelivered/nope/redeliver", {}),
        ("/dashboard/approvals/nope", {"decision": "approve"}),
        ("/dashboard/pairing/NOPE", {"decision": "deny"}),
    ):
        response = client.post(path, data={"csrf": token, **data})
        assert response.status_code == 404, (path, response.status_code, response.text)
        # a page a person can read, saying what was not found
        refused = BeautifulSoup(response.text, "html.parser").select_one("#refused")
        assert refused is not None and "nope" in refused.text.lower(), response.text
    assert client.get("/dashboard/runs/nope/actions").status_code == 404
    # And a decision that is neither approve nor deny is a 422
    response = client.post("/dashboard/pairing/X", data={"csrf": token, "decision": "maybe"})
    assert response.status_code == 422, response.text


def test_fork_form_reruns_from_a_step_reusing_the_steps_before_it(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run that went past its first step
    run_id = _waiting_run(runtime, registry)
    client = signed_in(runtime)
    token = csrf(client, f"/dashboard/runs/{run_id}/actions")
    # When it is rerun from its second step
    response = client.post(f"/dashboard/runs/{run_id}/fork",
                           data={"csrf": token, "from_step": "second:0"})  # fmt: skip
    # Then the browser goes to the new run, whose journal holds the first step only
    assert response.status_code == 303, response.text
    new_id = response.headers["location"].rsplit("/", 1)[1]
    assert new_id != run_id and list(runtime.ledger.journal(new_id)) == ["first:0"]
    # And a step the run does not have is a 422
    bad = client.post(f"/dashboard/runs/{run_id}/fork", data={"csrf": token, "from_step": "x"})
    assert bad.status_code == 422, bad.text


def test_redeliver_form_publishes_the_reply_again_and_forgets_it(runtime: Runtime) -> None:
    # Given a reply the platform refused
    records = redis_records(runtime)
    ready = {"response": "hi", "channel": "telegram", "run_id": "run-1",
             "destination": {"chat_id": "42"}}  # fmt: skip
    reply = UndeliveredReply(reply_id="rep-1", run_id="run-1", channel="telegram", chat_id="42",
                             event={"data": ready}, error="403", at_ms=5)  # fmt: skip
    records.undelivered.record(reply)
    client = signed_in(runtime)
    page = soup(client, "/dashboard/actions")
    assert page.select_one('tr[data-reply="rep-1"]') is not None
    token = str(page.select_one("#undelivered input[name=csrf]")["value"])  # type: ignore[index]
    # When Redeliver is pressed
    response = client.post("/dashboard/undelivered/rep-1/redeliver", data={"csrf": token})
    # Then it is published again and no longer listed
    assert response.status_code == 303, response.text
    assert records.undelivered.get("rep-1") is None
    names = [f["name"] for _id, f in runtime.redis.xrange(runtime.keys.events)]  # type: ignore[index, union-attr]
    assert "agent.reply.ready" in names, names


def test_pairing_form_approves_a_code_as_pair_approve_does(runtime: Runtime) -> None:
    # Given a pending pairing code
    store = redis_records(runtime).pairing
    request, _ = store.request("telegram:user:7", "Ann", "telegram")
    client = signed_in(runtime)
    page = soup(client, "/dashboard/actions")
    token = str(page.select_one("#pairing input[name=csrf]")["value"])  # type: ignore[index]
    # When Approve is pressed
    response = client.post(f"/dashboard/pairing/{request.code}",
                           data={"csrf": token, "decision": "approve"})  # fmt: skip
    # Then the person is allowed and the flash names them
    assert response.status_code == 303, response.text
    assert store.allowed(["telegram:user:7"])
    assert "approved telegram:user:7 (Ann)" in str(soup(client, "/dashboard/actions"))


def test_pending_approvals_lists_only_open_requests_of_waiting_runs(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a waiting run with an open request, and one whose request was answered
    run_id = _waiting_run(runtime, registry)
    store = redis_records(runtime).approvals
    store.open("ap-1", [], "s", run_id)
    # Then it is listed
    assert [(a.approval_id, a.run_id) for a in pending_approvals(runtime)] == [("ap-1", run_id)]
    # When it is answered, Then it is not
    store.decide("ap-1", "deny", "x", "x")
    assert pending_approvals(runtime) == []


def test_a_request_naming_approvers_is_answered_only_with_the_override_box(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a waiting run whose request only the person who asked may answer
    run_id = _waiting_run(runtime, registry)
    redis_records(runtime).approvals.open("ap-2", ["telegram:user:7"], "s", run_id)
    client = signed_in(runtime)
    # When the actions page is opened, Then it names who was asked and offers only overrides
    (row,) = soup(client, "/dashboard/actions").select('#approvals tr[data-approval="ap-2"]')
    assert "for telegram:user:7" in row.text, row.text
    buttons = [b.text for b in row.select("button")]
    assert buttons == ["Approve (override)", "Deny (override)"], buttons
    assert row.select_one("input[type=checkbox][name=override][value=yes][required]") is not None
    # And a press without the box ticked is refused (400, saying why), nothing sent
    token = csrf(client, f"/dashboard/runs/{run_id}/actions")
    response = client.post("/dashboard/approvals/ap-2", data={"csrf": token, "decision": "approve"})
    assert response.status_code == 400 and "override" in response.text, response.text
    drain(runtime)
    assert redis_records(runtime).approvals.settled("ap-2") is None


def test_an_override_pressed_twice_records_one_answer_and_flashes_the_second(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a request only telegram:user:7 may answer, overridden from the console
    run_id = _waiting_run(runtime, registry)
    redis_records(runtime).approvals.open("ap-3", ["telegram:user:7"], "s", run_id)
    registry.register(answer_approval)
    runtime.register_functions()
    client = signed_in(runtime)
    form = {"csrf": csrf(client, "/dashboard/actions"), "override": "yes"}
    first = client.post("/dashboard/approvals/ap-3", data={**form, "decision": "deny"})
    drain(runtime)
    # When it is pressed again (another tab still showing the buttons)
    second = client.post("/dashboard/approvals/ap-3", data={**form, "decision": "approve"})
    # Then the first counted, as an override, and the second is told so in a flash
    assert (first.status_code, second.status_code) == (303, 303), second.text
    settled = redis_records(runtime).approvals.settled("ap-3")
    by = "the operator (dashboard), overriding telegram:user:7"
    assert settled is not None and (settled.state, settled.by) == ("deny", by)
    flash = soup(client, "/dashboard/actions").select_one("#flash")
    assert flash is not None and f"already deny {by}" in flash.text, flash
