"""The console's actions: cancel a run, rerun it from a step (a fork), redeliver a reply,
answer an approval request, approve or deny a pairing code.

Every action is a POST form carrying the sign-in's CSRF token (`pages.check_csrf`), made
only by a signed-in operator, through the same code path as its command (`harness runs
cancel`, `runs fork`, `runs redeliver`, `pair approve`/`deny`) or chat button
(`answer_approval_as_operator`). Each logs one line, leaves a flash message and redirects
(303); an unknown id is a 404 page, a bad form a 400/422, never a 500.
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from harness.errors import FunctionNotFoundError, InvalidEventError, RunNotFoundError
from harness.observe.fork import fork
from harness.observe.pending_work import (
    answer_approval_as_operator,
    pending_approvals,
    pending_work,
)
from harness.observe.run_views import run_view
from harness.records.redelivery import redeliver
from harness.records.stores import redis_records
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all
from harness.runtime.ledger import RunRecord
from harness.web.body import MAX_FORM_BYTES, read_body
from harness.web.dashboard import pages, render
from harness.web.deps import WebContext, web_context

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
"""Mounted under `/dashboard` by `routes.router`."""
Ctx = Annotated[WebContext, Depends(web_context)]
Decision = Literal["approve", "deny"]


async def _form(request: Request, context: WebContext) -> dict[str, str]:
    """The signed-in operator's URL-encoded form, its CSRF token checked; 400 when it is not
    UTF-8, 403 for a missing or stale token."""
    render.require(request, context)
    body = await read_body(request, limit=MAX_FORM_BYTES)
    try:
        fields = {k: v[0] for k, v in parse_qs(body.decode("utf-8")).items()}
    except UnicodeDecodeError:
        raise HTTPException(400, "the form is not UTF-8 text") from None
    pages.check_csrf(request, context, fields.get("csrf", ""))
    return fields


def _decision(fields: dict[str, str]) -> Decision:
    decision = fields.get("decision", "")
    if decision not in ("approve", "deny"):
        raise HTTPException(422, "decision: approve or deny")
    return "approve" if decision == "approve" else "deny"


def _record(runtime: Runtime, run_id: str) -> RunRecord:
    record = runtime.ledger.run(run_id)
    if record is None:
        raise HTTPException(404, f"no run {run_id} (unknown or expired)")
    return record


@router.get("/actions")
@pages.as_page
def actions_page(request: Request, context: Ctx) -> HTMLResponse:
    """Pending approval requests, pairing codes and undelivered replies, each with its
    buttons."""
    render.require(request, context)
    work = pending_work(context.runtime_factory())
    return pages.page(request, context, "actions.html", work=work)


@router.get("/runs/{run_id}/actions")
@pages.as_page
def run_actions_page(request: Request, context: Ctx, run_id: str) -> HTMLResponse:
    """A run's actions: cancel while it is live, rerun from any of its steps."""
    render.require(request, context)
    runtime = context.runtime_factory()
    record = _record(runtime, run_id)
    journal = runtime.ledger.journal(run_id)
    steps = sorted(journal, key=lambda key: _ended(journal[key].get("t")))
    return pages.page(request, context, "run_actions.html", run=run_view(record), steps=steps)


def _ended(value: object) -> float:
    """A journal entry's end time, for ordering; unknown ones last."""
    return float(value) if isinstance(value, int | float) else float("inf")


@router.post("/runs/{run_id}/cancel")
@pages.as_page
async def cancel_run(request: Request, context: Ctx, run_id: str) -> RedirectResponse:
    """Ask a live run to stop at its next step (as `harness runs cancel`)."""
    await _form(request, context)
    runtime = context.runtime_factory()

    def cancel() -> bool:
        _record(runtime, run_id)
        live, kicks = runtime.ledger.request_cancel(
            run_id, "cancelled from the dashboard", runtime.now_ms()
        )
        kick_all(runtime.kicker, kicks)
        return live

    live = await run_in_threadpool(cancel)
    log.info("dashboard: cancel run %s (%s)", run_id, "asked" if live else "already ended")
    message = f"run {run_id} will stop at its next step" if live else (
        f"run {run_id} is not live (it has already ended)")  # fmt: skip
    return pages.redirect_with_flash(f"/dashboard/runs/{run_id}", message)


@router.post("/runs/{run_id}/fork")
@pages.as_page
async def fork_run(request: Request, context: Ctx, run_id: str) -> RedirectResponse:
    """Rerun the run's function on the same event, its journal reused up to the form's
    `from_step` (nothing reused when empty), as `harness runs fork --from`."""
    fields = await _form(request, context)
    runtime = context.runtime_factory()
    from_step = fields.get("from_step", "")

    def start() -> str:
        return fork(runtime, _record(runtime, run_id), from_step)

    try:
        new_id = await run_in_threadpool(start)
    except (RunNotFoundError, FunctionNotFoundError) as exc:
        raise HTTPException(422, str(exc)) from exc
    log.info("dashboard: rerun %s from %r as %s", run_id, from_step or "the start", new_id)
    where = f"from step {from_step}" if from_step else "from the start"
    return pages.redirect_with_flash(f"/dashboard/runs/{new_id}", f"rerun of {run_id} {where}")


@router.post("/undelivered/{reply_id}/redeliver")
@pages.as_page
async def redeliver_reply(request: Request, context: Ctx, reply_id: str) -> RedirectResponse:
    """Deliver an undelivered reply again (as `harness runs redeliver`)."""
    await _form(request, context)
    runtime = context.runtime_factory()

    def again() -> str:
        reply = redis_records(runtime).undelivered.get(reply_id)
        if reply is None:
            raise HTTPException(404, f"no undelivered reply {reply_id}")
        return redeliver(runtime, reply)

    try:
        event_id = await run_in_threadpool(again)
    except InvalidEventError as exc:  # a reply kept by an older version, no longer valid
        raise HTTPException(422, str(exc)) from exc
    log.info("dashboard: redeliver reply %s as %s", reply_id, event_id)
    return pages.redirect_with_flash("/dashboard/actions", f"reply {reply_id} sent again")


@router.post("/approvals/{approval_id}")
@pages.as_page
async def answer_approval(request: Request, context: Ctx, approval_id: str) -> RedirectResponse:
    """Approve or deny a pending request, as a chat button press: the first answer counts. A
    request that names approvers is answered only as an explicit override: the form must
    carry `override=yes` (the page's confirmation box), else 400 and nothing is sent."""
    fields = await _form(request, context)
    decision = _decision(fields)
    runtime = context.runtime_factory()

    def press() -> tuple[str, str]:
        """The flash message, and ", overriding <approvers>" for an override (else "")."""
        settled = redis_records(runtime).approvals.settled(approval_id)
        if settled is not None:
            return f"request {approval_id} was already {settled.state} {settled.by}".strip(), ""
        pending = [a for a in pending_approvals(runtime) if a.approval_id == approval_id]
        if not pending:
            raise HTTPException(404, f"no pending approval request {approval_id}")
        overridden = ", ".join(pending[0].approvers)
        if pending[0].needs_override and fields.get("override") != "yes":
            raise HTTPException(400, f"request {approval_id} is for {overridden} to answer: "
                                "tick the override box to answer it over them")  # fmt: skip
        answer_approval_as_operator(runtime, approval_id, decision, override=bool(overridden))
        over = f", overriding {overridden}" if overridden else ""
        return f"{decision} sent for request {approval_id}{over} (the first answer counts)", over

    message, over = await run_in_threadpool(press)
    log.info("dashboard: %s approval request %s%s", decision, approval_id, over)
    return pages.redirect_with_flash("/dashboard/actions", message)


@router.post("/pairing/{code}")
@pages.as_page
async def answer_pairing(request: Request, context: Ctx, code: str) -> RedirectResponse:
    """Approve or deny a pairing code (as `harness pair approve` / `deny`)."""
    decision = _decision(await _form(request, context))
    store = redis_records(context.runtime_factory()).pairing
    settle = store.approve if decision == "approve" else store.deny
    settled = await run_in_threadpool(settle, code)
    if settled is None:
        raise HTTPException(404, f"no pending pairing code {code} (unknown or expired)")
    log.info("dashboard: %s pairing %s", decision, settled.subject)
    verb = "approved" if decision == "approve" else "denied"
    return pages.redirect_with_flash(
        "/dashboard/actions", f"{verb} {settled.subject} ({settled.label or 'no name'})"
    )
