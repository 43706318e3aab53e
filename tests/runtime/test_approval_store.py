"""The approval record: first answer wins, only approvers answer, ended runs expire it."""

from __future__ import annotations

from harness.runtime import Runtime
from harness.runtime.approval_store import ApprovalStore

ANA = "telegram:user:1"


def _waiting_run(runtime: Runtime, run_id: str = "run-1") -> str:
    runtime.redis.hset(runtime.keys.run(run_id), "status", "waiting")
    return run_id


def test_store_first_answer_wins_and_later_ones_are_told_who_answered(runtime: Runtime) -> None:
    # Given a pending request Ana may answer
    store = ApprovalStore(runtime)
    store.open("a1", [ANA], "chat-1", _waiting_run(runtime))
    # When she approves, then denies
    first = store.decide("a1", "approve", ANA, "Ana")
    second = store.decide("a1", "deny", ANA, "Ana")
    # Then the first counted and the second was told it was already approved, by Ana
    assert (first.outcome, first.state, first.by) == ("recorded", "approve", "Ana")
    assert (second.outcome, second.state, second.by) == ("answered", "approve", "Ana")
    assert store.pending("chat-1") is None


def test_store_refuses_someone_not_allowed_and_keeps_the_request_pending(
    runtime: Runtime,
) -> None:
    store = ApprovalStore(runtime)
    store.open("a1", [ANA], "chat-1", _waiting_run(runtime))
    claim = store.decide("a1", "approve", "telegram:user:666", "Mallory")
    assert claim.outcome == "forbidden"
    assert store.pending("chat-1") == "a1", "a refused answer must leave the request pending"


def test_store_answer_after_the_run_ended_is_expired(runtime: Runtime) -> None:
    # Given a request whose run was cancelled while it waited
    store = ApprovalStore(runtime)
    run_id = _waiting_run(runtime)
    store.open("a1", [ANA], "chat-1", run_id)
    runtime.redis.hset(runtime.keys.run(run_id), "status", "cancelled")
    # When Ana answers
    claim = store.decide("a1", "approve", ANA, "Ana")
    # Then she is told it expired, and the request is no longer pending
    assert claim.outcome == "expired"
    assert store.pending("chat-1") is None


def test_store_timeout_after_an_answer_reports_the_answer(runtime: Runtime) -> None:
    store = ApprovalStore(runtime)
    store.open("a1", [], None, _waiting_run(runtime))
    store.decide("a1", "session", "cli:user:cli", "terminal")
    claim = store.expire("a1")
    assert (claim.outcome, claim.state, claim.by) == ("answered", "session", "terminal")


def test_store_unknown_request_is_unknown(runtime: Runtime) -> None:
    assert ApprovalStore(runtime).decide("forged", "approve", ANA, "Ana").outcome == "unknown"


def test_store_grant_belongs_to_the_person_who_gave_it(runtime: Runtime) -> None:
    # Given Ana allowed bash for herself in a group's session
    store = ApprovalStore(runtime)
    store.grant("group-1", ANA, "bash")
    # Then her turns there read it, another member's and another session's do not
    assert store.grants("group-1", [ANA]) == ["bash"]
    assert store.grants("group-1", ["telegram:user:2"]) == []
    assert store.grants("group-2", [ANA]) == []


def test_store_session_wide_grant_of_the_old_kind_counts_for_nobody(runtime: Runtime) -> None:
    # Given a grant kept the old way: the tool for the whole session
    runtime.redis.sadd(f"{runtime.keys.prefix}:approval:grants:group-1", "bash")
    # Then no one's turn reads it
    assert ApprovalStore(runtime).grants("group-1", [ANA, "owner"]) == []


def test_store_settled_reads_the_answer_and_who_gave_it_from_the_record(
    runtime: Runtime,
) -> None:
    # Given a pending request Ana may answer
    store = ApprovalStore(runtime)
    store.open("a1", [ANA], "chat-1", _waiting_run(runtime))
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
