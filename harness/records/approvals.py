"""Pending approval requests and session grants: who may answer, and the answer.

`ApprovalStore` is the contract; `RedisApprovalStore` keeps the records in Redis and
`MemoryApprovalStore` is its in-memory twin for tests (same answers, one process).

The request record is what makes "the first answer counts" true: `decide` and `expire` are one
Lua script each (`lua/approval_decide.lua`), so of two clicks, or of a click and the timeout,
exactly one changes the record and every later attempt is told what happened instead. A
request whose run has ended without it (cancelled with its chat's new message, failed)
counts as expired. Records live a week after their request (for late clicks). A grant ("allow
for this session") belongs to the person who gave it, in that session; a session's grants
live 30 days from its latest one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Literal, Protocol

from harness.events import ApprovalGiven
from harness.records.pairing import AccessStore, MemoryAccessStore, RedisAccessStore
from harness.runtime import scripts
from harness.runtime.bus_errors import on_bus
from harness.runtime.instance import Runtime

RECORD_TTL_S = 7 * 24 * 3600
GRANT_TTL_S = 30 * 24 * 3600

Outcome = Literal["recorded", "answered", "expired", "forbidden", "unknown"]
Others = Literal["none", "allowed"]


@dataclass(frozen=True)
class Claim:
    """The result of answering (or expiring) a request. `outcome` is `recorded` when this call
    changed the record; otherwise why not: `answered` / `expired` earlier (then `state`, `by`
    and `at` tell by whom and when), `forbidden` (the person may not answer this request), or
    `unknown` (no such request: forged, or long gone). `at` is ms since the epoch, or 0.
    `subject` is who answered as their channel verified it (`telegram:user:7`); empty for
    the harness's own decisions and for records written before it was kept."""

    outcome: Outcome
    state: str = ""
    by: str = ""
    at: int = 0
    subject: str = ""


class ApprovalStore(Protocol):
    """Approval requests and session grants. Answers are first-answer-wins: of two answers
    (or an answer and the timeout) exactly one is `recorded`, every later one is told what
    counted. The Redis implementation raises `BusUnavailableError` when Redis fails."""

    def open(
        self,
        approval_id: str,
        approvers: list[str],
        session_key: str | None = None,
        run_id: str | None = None,
        others: Others = "none",
    ) -> None:
        """Create the pending request once; idempotent (a replay changes nothing). An empty
        `approvers` means anyone who can reach the request may answer (the owner's own
        entry points); `others="allowed"` lets any allowed person answer besides them (a
        group with `AGENT_APPROVAL_GROUP_ANSWER=allowed`). With `session_key`, it becomes the
        session's pending request (see `pending`); with `run_id`, answers stop counting once
        that run has ended, and `of_run` finds it."""
        ...

    def posted(self, approval_id: str, message_id: str, request_json: str) -> None:
        """Remember the platform message that shows the request (and the request itself), so
        it can be rewritten when the request expires or is cancelled. Idempotent; nothing
        for a request never opened."""
        ...

    def where_posted(self, approval_id: str) -> tuple[str, str] | None:
        """The message id and request JSON `posted` noted, or None when nothing was posted."""
        ...

    def of_run(self, run_id: str) -> str | None:
        """The id of the latest request `run_id` opened, or None."""
        ...

    def pending(self, session_key: str) -> str | None:
        """The id of the session's latest request if it is still pending, else None."""
        ...

    def approvers(self, approval_id: str) -> list[str] | None:
        """Who may answer the request (empty: whoever reaches it), or None when no record."""
        ...

    def decide(
        self, approval_id: str, decision: str, subject: str, label: str, *, allowed: bool = False
    ) -> Claim:
        """Record `decision` by `subject` (shown as `label`) if the request is pending and the
        subject may answer it (one of its approvers, or `allowed` where the request lets any
        allowed person answer); atomic, first answer wins. A request whose run has ended
        counts as expired."""
        ...

    def answer(self, given: ApprovalGiven) -> Claim:
        """`decide` for a press or a typed answer: the person counts as allowed (for requests
        that let any allowed person answer) when the channel's allowlist names them or the
        owner paired them. The console operator's `override` (`ApprovalGiven.by_operator`)
        skips the approvers, first answer still winning, recorded as "<label>, overriding
        <approvers>"."""
        ...

    def decide_unattended(self, approval_id: str, decision: str, label: str) -> Claim:
        """Record `decision` (shown as `label`) for a request nobody can answer because it
        could not be shown, whoever its approvers are; atomic, first answer wins like a
        press, so a late press (or the timeout) changes nothing once this counted."""
        ...

    def expire(self, approval_id: str) -> Claim:
        """Close a pending request as expired; if it was answered first, say so instead."""
        ...

    def settled(self, approval_id: str) -> Claim | None:
        """The answer that counts for the request: a `Claim` with outcome `answered` (its
        `state` the decision) or `expired`. None while the request is pending, and for a
        request with no record (never opened, or long gone). Changes nothing."""
        ...

    def grant(self, session_key: str, person: str, tool: str) -> None:
        """Let `tool` run without asking `person` again in `session_key` (a person's user
        subject, or the owner's mark for the owner's own entry points), for the rest of the
        session's life (30 days from its latest grant). Idempotent."""
        ...

    def grants(self, session_key: str, people: Collection[str]) -> list[str]:
        """The tools any of `people` allowed for themselves in `session_key`, sorted."""
        ...


class RedisApprovalStore:
    """`ApprovalStore` under the runtime's key prefix. Every method is one round trip; `decide`
    and `expire` are one Lua script (`lua/approval_decide.lua`); Redis errors become
    `BusUnavailableError`."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._prefix = f"{runtime.keys.prefix}:approval"
        self._decide = scripts.load_from(runtime.redis, "harness.records", "approval_decide")

    def _record(self, approval_id: str) -> str:
        return f"{self._prefix}:request:{approval_id}"

    @on_bus("record an approval request")
    def open(
        self,
        approval_id: str,
        approvers: list[str],
        session_key: str | None = None,
        run_id: str | None = None,
        others: Others = "none",
    ) -> None:
        """See `ApprovalStore.open`."""
        key = self._record(approval_id)
        redis = self._runtime.redis
        if redis.hsetnx(key, "state", "pending"):
            redis.hset(key, mapping={"approvers": json.dumps(approvers), "others": others})
            if run_id:
                redis.hset(key, "run", run_id)
                redis.set(f"{self._prefix}:run:{run_id}", approval_id, ex=RECORD_TTL_S)
            redis.expire(key, RECORD_TTL_S)
            if session_key:
                redis.set(f"{self._prefix}:pending:{session_key}", approval_id, ex=RECORD_TTL_S)

    @on_bus("note where an approval request was posted")
    def posted(self, approval_id: str, message_id: str, request_json: str) -> None:
        """See `ApprovalStore.posted`."""
        key = self._record(approval_id)
        if self._runtime.redis.exists(key):
            self._runtime.redis.hset(
                key, mapping={"message_id": message_id, "request": request_json}
            )

    @on_bus("find where an approval request was posted")
    def where_posted(self, approval_id: str) -> tuple[str, str] | None:
        """See `ApprovalStore.where_posted`."""
        raw = self._runtime.redis.hmget(self._record(approval_id), ["message_id", "request"])
        message_id, request = (v.decode() if isinstance(v, bytes) else v for v in raw)
        if not message_id or not request:
            return None
        return str(message_id), str(request)

    @on_bus("find a run's approval request")
    def of_run(self, run_id: str) -> str | None:
        """See `ApprovalStore.of_run`."""
        raw = self._runtime.redis.get(f"{self._prefix}:run:{run_id}")
        if raw is None:
            return None
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    @on_bus("find a session's pending approval request")
    def pending(self, session_key: str) -> str | None:
        """See `ApprovalStore.pending`."""
        redis = self._runtime.redis
        raw = redis.get(f"{self._prefix}:pending:{session_key}")
        if raw is None:
            return None
        approval_id = raw.decode() if isinstance(raw, bytes) else str(raw)
        state = redis.hget(self._record(approval_id), "state")
        state = state.decode() if isinstance(state, bytes) else state
        return approval_id if state == "pending" else None

    @on_bus("read who may answer an approval request")
    def approvers(self, approval_id: str) -> list[str] | None:
        """See `ApprovalStore.approvers`."""
        raw = self._runtime.redis.hget(self._record(approval_id), "approvers")
        return None if raw is None else [str(a) for a in json.loads(raw)]

    @on_bus("answer an approval request")
    def decide(
        self, approval_id: str, decision: str, subject: str, label: str, *, allowed: bool = False
    ) -> Claim:
        """See `ApprovalStore.decide`."""
        return self._run(approval_id, decision, subject, label or subject, allowed)

    @on_bus("answer an approval request")
    def answer(self, given: ApprovalGiven) -> Claim:
        """See `ApprovalStore.answer`."""
        allowed = given.allowlisted or RedisAccessStore(self._runtime).allowed([given.subject])
        label = given.label or given.subject
        return self._run(given.approval_id, given.decision, given.subject, label, allowed,
                         override=given.by_operator)  # fmt: skip

    @on_bus("answer an approval request for nobody")
    def decide_unattended(self, approval_id: str, decision: str, label: str) -> Claim:
        """See `ApprovalStore.decide_unattended`."""
        return self._run(approval_id, decision, "", label, system=True)

    @on_bus("expire an approval request")
    def expire(self, approval_id: str) -> Claim:
        """See `ApprovalStore.expire`."""
        return self._run(approval_id, "expired", "", "")

    def _run(
        self,
        approval_id: str,
        decision: str,
        subject: str,
        label: str,
        allowed: bool = False,
        *,
        system: bool = False,
        override: bool = False,
    ) -> Claim:
        now = str(self._runtime.now_ms())
        keys = [self._record(approval_id), self._runtime.keys.run("")]
        flags = ["1" if flag else "0" for flag in (allowed, system, override)]
        raw = self._decide(keys=keys, args=[decision, subject, now, label, *flags])
        outcome, state, by, at, who = (v.decode() if isinstance(v, bytes) else str(v) for v in raw)
        return Claim(outcome=outcome, state=state, by=by, at=int(at or 0), subject=who)  # type: ignore[arg-type]

    @on_bus("read an approval request's answer")
    def settled(self, approval_id: str) -> Claim | None:
        """See `ApprovalStore.settled`. Reads the record `decide`, `decide_unattended` and
        `expire` write, nothing else."""
        fields = ["state", "by", "at", "who"]
        raw = self._runtime.redis.hmget(self._record(approval_id), fields)
        state, by, at, who = (v.decode() if isinstance(v, bytes) else (v or "") for v in raw)
        if state not in ("approve", "deny", "session", "expired"):
            return None
        outcome: Outcome = "expired" if state == "expired" else "answered"
        return Claim(outcome=outcome, state=state, by=by, at=int(at or 0), subject=who)

    @on_bus("allow a tool for a person in a session")
    def grant(self, session_key: str, person: str, tool: str) -> None:
        """See `ApprovalStore.grant`."""
        key = self._grants(session_key)
        self._runtime.redis.sadd(key, json.dumps([person, tool]))
        self._runtime.redis.expire(key, GRANT_TTL_S)

    @on_bus("read a person's grants in a session")
    def grants(self, session_key: str, people: Collection[str]) -> list[str]:
        """See `ApprovalStore.grants`."""
        # Grants kept the old way, for the whole session (`{prefix}:approval:grants:<session>`),
        # are not read: they count for no one.
        members = self._runtime.redis.smembers(self._grants(session_key))
        return sorted({tool for person, tool in map(_grant_of, members) if person in people})

    def _grants(self, session_key: str) -> str:
        return f"{self._prefix}:grants-of:{session_key}"


def _grant_of(member: bytes | str) -> tuple[str, str]:
    """The (person, tool) a grants member holds; ("", "") for one not written by `grant`."""
    try:
        person, tool = json.loads(member)
    except (ValueError, TypeError):
        return "", ""
    return (person, tool) if isinstance(person, str) and isinstance(tool, str) else ("", "")


_ENDED = (None, "completed", "failed", "cancelled")


@dataclass
class _Request:
    approvers: list[str]
    others: Others
    run: str | None
    state: str = "pending"
    by: str = ""
    at: int = 0
    who: str = ""
    where: tuple[str, str] | None = None


class MemoryApprovalStore:
    """`ApprovalStore` in one process's memory, for tests: the same answers as
    `RedisApprovalStore` (first answer wins, an ended run expires its request). Records never
    expire. `run_status` gives a run's status (None: no such run, which counts as ended);
    `access` answers who is allowed; `clock` gives seconds since the epoch."""

    def __init__(
        self,
        run_status: Callable[[str], str | None] = lambda run_id: "running",
        access: AccessStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._run_status = run_status
        self._access: AccessStore = access if access is not None else MemoryAccessStore(clock)
        self._clock = clock
        self._requests: dict[str, _Request] = {}
        self._of_run: dict[str, str] = {}
        self._pending: dict[str, str] = {}
        self._grants: dict[str, set[tuple[str, str]]] = {}

    def open(
        self,
        approval_id: str,
        approvers: list[str],
        session_key: str | None = None,
        run_id: str | None = None,
        others: Others = "none",
    ) -> None:
        """See `ApprovalStore.open`."""
        if approval_id in self._requests:
            return
        self._requests[approval_id] = _Request(list(approvers), others, run_id or None)
        if run_id:
            self._of_run[run_id] = approval_id
        if session_key:
            self._pending[session_key] = approval_id

    def posted(self, approval_id: str, message_id: str, request_json: str) -> None:
        """See `ApprovalStore.posted`."""
        if approval_id in self._requests:
            self._requests[approval_id].where = (message_id, request_json)

    def where_posted(self, approval_id: str) -> tuple[str, str] | None:
        """See `ApprovalStore.where_posted`."""
        request = self._requests.get(approval_id)
        return None if request is None else request.where

    def of_run(self, run_id: str) -> str | None:
        """See `ApprovalStore.of_run`."""
        return self._of_run.get(run_id)

    def pending(self, session_key: str) -> str | None:
        """See `ApprovalStore.pending`."""
        approval_id = self._pending.get(session_key)
        request = self._requests.get(approval_id or "")
        return approval_id if request is not None and request.state == "pending" else None

    def approvers(self, approval_id: str) -> list[str] | None:
        """See `ApprovalStore.approvers`."""
        request = self._requests.get(approval_id)
        return None if request is None else list(request.approvers)

    def decide(
        self, approval_id: str, decision: str, subject: str, label: str, *, allowed: bool = False
    ) -> Claim:
        """See `ApprovalStore.decide`."""
        return self._settle(approval_id, decision, subject, label or subject, allowed=allowed)

    def answer(self, given: ApprovalGiven) -> Claim:
        """See `ApprovalStore.answer`."""
        allowed = given.allowlisted or self._access.allowed([given.subject])
        label = given.label or given.subject
        return self._settle(given.approval_id, given.decision, given.subject, label,
                            allowed=allowed, override=given.by_operator)  # fmt: skip

    def decide_unattended(self, approval_id: str, decision: str, label: str) -> Claim:
        """See `ApprovalStore.decide_unattended`."""
        return self._settle(approval_id, decision, "", label, system=True)

    def expire(self, approval_id: str) -> Claim:
        """See `ApprovalStore.expire`."""
        return self._settle(approval_id, "expired", "", "")

    def _settle(
        self,
        approval_id: str,
        decision: str,
        subject: str,
        label: str,
        *,
        allowed: bool = False,
        system: bool = False,
        override: bool = False,
    ) -> Claim:
        """What `lua/approval_decide.lua` does, step for step."""
        request = self._requests.get(approval_id)
        if request is None:
            return Claim("unknown")
        r = request
        if r.state != "pending":
            outcome: Outcome = "expired" if r.state == "expired" else "answered"
            return Claim(outcome, r.state, r.by, r.at, r.who)
        now = int(self._clock() * 1000)
        if r.run and decision != "expired" and self._run_status(r.run) in _ENDED:
            r.state, r.at = "expired", now
            return Claim("expired", "expired", "", now, "")
        if decision == "expired":
            r.state, r.at = "expired", now
            return Claim("recorded", "expired", "", now, "")
        if r.approvers and override:
            label = f"{label}, overriding {', '.join(r.approvers)}"
        elif r.approvers and not system:
            may = subject in r.approvers or (r.others == "allowed" and allowed)
            if not may:
                return Claim("forbidden", r.state, r.by, r.at, r.who)
        r.state, r.by, r.at, r.who = decision, label, now, subject
        return Claim("recorded", decision, label, now, subject)

    def settled(self, approval_id: str) -> Claim | None:
        """See `ApprovalStore.settled`. Reads the record `decide`, `decide_unattended` and
        `expire` write, nothing else."""
        r = self._requests.get(approval_id)
        if r is None or r.state not in ("approve", "deny", "session", "expired"):
            return None
        outcome: Outcome = "expired" if r.state == "expired" else "answered"
        return Claim(outcome, r.state, r.by, r.at, r.who)

    def grant(self, session_key: str, person: str, tool: str) -> None:
        """See `ApprovalStore.grant`."""
        self._grants.setdefault(session_key, set()).add((person, tool))

    def grants(self, session_key: str, people: Collection[str]) -> list[str]:
        """See `ApprovalStore.grants`."""
        members = self._grants.get(session_key, set())
        return sorted({tool for person, tool in members if person in people})
