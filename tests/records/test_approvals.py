"""The approval record: first answer wins, only approvers answer, ended runs expire it. Every
test runs on the Redis store and on its in-memory twin (`stores`)."""

from __future__ import annotations

from harness.events import OPERATOR_CHANNEL, OPERATOR_SUBJECT, ApprovalGiven, Destination
from harness.records.approvals import RedisApprovalStore
from harness.runtime import Runtime
from tests.records.conftest import Stores

ANA = "telegram:user:1"
BOB = "telegram:user:2"


def _waiting_run(stores: Stores, run_id: str = "run-1") -> str:
    stores.run_status(run_id, "waiting")
    return run_id


def test_store_first_answer_wins_and_later_ones_are_told_who_answered(stores: Stores) -> None:
    # Given a pending request Ana may answer
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores))
    # When she approves, then denies
    first = store.decide("a1", "approve", ANA, "Ana")
    second = store.decide("a1", "deny", ANA, "Ana")
    # Then the first counted and the second was told it was already approved, by Ana
    assert (first.outcome, first.state, first.by) == ("recorded", "approve", "Ana")
    assert (second.outcome, second.state, second.by) == ("answered", "approve", "Ana")
    assert store.pending("chat-1") is None


def test_store_refuses_someone_not_allowed_and_keeps_the_request_pending(
    stores: Stores,
) -> None:
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores))
    claim = store.decide("a1", "approve", "telegram:user:666", "Mallory")
    assert claim.outcome == "forbidden"
    assert store.pending("chat-1") == "a1", "a refused answer must leave the request pending"


def test_store_answer_after_the_run_ended_is_expired(stores: Stores) -> None:
    # Given a request whose run was cancelled while it waited
    store = stores.approvals
    run_id = _waiting_run(stores)
    store.open("a1", [ANA], "chat-1", run_id)
    stores.run_status(run_id, "cancelled")
    # When Ana answers
    claim = store.decide("a1", "approve", ANA, "Ana")
    # Then she is told it expired, and the request is no longer pending
    assert claim.outcome == "expired"
    assert store.pending("chat-1") is None


def test_store_timeout_after_an_answer_reports_the_answer(stores: Stores) -> None:
    store = stores.approvals
    store.open("a1", [], None, _waiting_run(stores))
    store.decide("a1", "session", "cli:user:cli", "terminal")
    claim = store.expire("a1")
    assert (claim.outcome, claim.state, claim.by) == ("answered", "session", "terminal")


def test_store_unknown_request_is_unknown(stores: Stores) -> None:
    assert stores.approvals.decide("forged", "approve", ANA, "Ana").outcome == "unknown"


def test_store_grant_belongs_to_the_person_who_gave_it(stores: Stores) -> None:
    # Given Ana allowed bash for herself in a group's session
    store = stores.approvals
    store.grant("group-1", ANA, "bash")
    # Then her turns there read it, another member's and another session's do not
    assert store.grants("group-1", [ANA]) == ["bash"]
    assert store.grants("group-1", ["telegram:user:2"]) == []
    assert store.grants("group-2", [ANA]) == []


def test_store_session_wide_grant_of_the_old_kind_counts_for_nobody(runtime: Runtime) -> None:
    # Given a grant kept the old way: the tool for the whole session
    runtime.redis.sadd(f"{runtime.keys.prefix}:approval:grants:group-1", "bash")
    # Then no one's turn reads it
    assert RedisApprovalStore(runtime).grants("group-1", [ANA, "owner"]) == []


def test_store_settled_reads_the_answer_and_who_gave_it_from_the_record(
    stores: Stores,
) -> None:
    # Given a pending request Ana may answer
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores))
    # Then while it is pending the record holds no answer
    assert store.settled("a1") is None
    assert store.settled("never-opened") is None
    # When she allows it for the session
    store.decide("a1", "session", ANA, "Ana")
    # Then the record says so, with her verified subject
    settled = store.settled("a1")
    assert settled is not None
    assert (settled.outcome, settled.state, settled.by, settled.subject) == (
        "answered",
        "session",
        "Ana",
        ANA,
    )


def test_store_decide_for_nobody_counts_whoever_the_approvers_are(stores: Stores) -> None:
    # Given a request only Ana may answer, that could not be shown
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores))
    # When the harness denies it for nobody, and Ana presses later
    first = store.decide_unattended("a1", "deny", "nobody could be asked")
    late = store.decide("a1", "approve", ANA, "Ana")
    # Then the harness's answer counted and Ana is told so
    assert (first.outcome, first.state, first.subject) == ("recorded", "deny", "")
    assert (late.outcome, late.state, late.by) == ("answered", "deny", "nobody could be asked")


def test_store_lets_an_allowed_group_member_answer_only_where_the_request_says(
    stores: Stores,
) -> None:
    # Given two requests Ana may answer, one letting any allowed member answer too
    store = stores.approvals
    run_id = _waiting_run(stores)
    store.open("closed", [ANA], None, run_id)
    store.open("open", [ANA], None, run_id, others="allowed")
    # When Bob, paired by the owner, answers both
    stores.access.grant(BOB, "Bob", "test")
    closed = store.answer(_given("closed", BOB))
    opened = store.answer(_given("open", BOB))
    # Then only the request that lets others answer took his answer
    assert closed.outcome == "forbidden"
    assert (opened.outcome, opened.subject) == ("recorded", BOB)


def test_store_remembers_where_a_request_was_posted_and_which_run_opened_it(
    stores: Stores,
) -> None:
    # Given a request of a run, not yet posted
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores, "run-9"))
    assert store.where_posted("a1") is None
    # When it is posted (and a post is noted for a request never opened)
    store.posted("a1", "m-5", '{"tool": "bash"}')
    store.posted("never-opened", "m-6", "{}")
    # Then both are found again, and nothing was made up for the unknown one
    assert store.where_posted("a1") == ("m-5", '{"tool": "bash"}')
    assert store.where_posted("never-opened") is None
    assert (store.of_run("run-9"), store.of_run("run-0")) == ("a1", None)


def test_store_open_is_idempotent(stores: Stores) -> None:
    # Given an answered request
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores))
    store.decide("a1", "approve", ANA, "Ana")
    # When it is opened again (a replayed step)
    store.open("a1", ["telegram:user:666"], "chat-1")
    # Then the answer stands
    assert store.expire("a1").state == "approve"


def _given(approval_id: str, subject: str) -> ApprovalGiven:
    return ApprovalGiven(
        approval_id=approval_id, decision="approve", subject=subject, channel="telegram",
        destination=Destination(chat_id="1"),
    )  # fmt: skip


def test_store_says_who_may_answer_a_request(stores: Stores) -> None:
    # Given a request only Ana may answer, and one anyone at the owner's entry points may
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores))
    store.open("a2", [], None, _waiting_run(stores, "run-2"))
    # Then each says so, and an unknown request has no answer
    assert store.approvers("a1") == [ANA]
    assert store.approvers("a2") == []
    assert store.approvers("nope") is None


def _operator(approval_id: str, decision: str = "approve") -> ApprovalGiven:
    return ApprovalGiven(
        approval_id=approval_id, decision=decision, subject=OPERATOR_SUBJECT,  # type: ignore[arg-type]
        label="the operator (dashboard)", channel=OPERATOR_CHANNEL,
        destination=Destination(chat_id="dashboard"), override=True,
    )  # fmt: skip


def test_store_operator_override_skips_the_approvers_and_says_so(stores: Stores) -> None:
    # Given a request only Ana and Bob may answer, and one that names nobody
    store = stores.approvals
    store.open("a1", [ANA, BOB], "chat-1", _waiting_run(stores))
    store.open("a2", [], None, _waiting_run(stores, "run-2"))
    # When the operator overrides both from the console, and Ana presses late
    first = store.answer(_operator("a1"))
    plain = store.answer(_operator("a2", "deny"))
    late = store.decide("a1", "deny", ANA, "Ana")
    # Then the override counted, recorded as one, and Ana is told so
    overriding = f"the operator (dashboard), overriding {ANA}, {BOB}"
    assert (first.outcome, first.state, first.by) == ("recorded", "approve", overriding)
    assert (late.outcome, late.by) == ("answered", overriding)
    # And a request that names nobody records the operator plainly
    assert (plain.outcome, plain.by) == ("recorded", "the operator (dashboard)")


def test_store_operator_override_loses_to_an_earlier_answer(stores: Stores) -> None:
    # Given a request Ana answered first
    store = stores.approvals
    store.open("a1", [ANA], "chat-1", _waiting_run(stores))
    store.decide("a1", "deny", ANA, "Ana")
    # When the operator overrides it, Then the earlier answer stands
    claim = store.answer(_operator("a1"))
    assert (claim.outcome, claim.state, claim.by) == ("answered", "deny", "Ana")
