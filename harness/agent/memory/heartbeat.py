"""`agent-heartbeat`: distil what was logged since the last time into `MEMORY.md`.

Runs on `HEARTBEAT_CRON` (in `AGENT_TIMEZONE`) and on `agent.memory.distill` events (what
`harness memory distill` publishes; `data.force` skips the thresholds). Each run is four
durable steps:

    plan     read the positions, the new log entries and MEMORY.md; decide (no model call
             unless something new passes the thresholds, see `distill.decide`)
    distill  one model call with the same providers and fallback as the agent's think step
    apply    check the answer; write it as a new version, or hold it back as a rejected
             candidate; advance the positions only past what reached MEMORY.md
    prune    delete expired logs that are wholly distilled

Replays are safe: `plan` and `distill` are memoized by the journal, and `apply` and `prune`
are idempotent (a version already written is not written again).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from harness.agent.budget_gate import budget_gate, stopped
from harness.agent.deps import AgentDeps, agent_deps
from harness.agent.memory.distill import (
    DISTILL_EVENT,
    DISTILL_PROMPT,
    HEARTBEAT_FUNCTION,
    PendingLogs,
    Thresholds,
    advance,
    check_candidate,
    clean_candidate,
    decide,
    expired_logs,
    load_state,
    pending_logs,
    render_request,
    save_state,
)
from harness.agent.memory.history import MemoryChangedError, MemoryHistory, text_sha
from harness.agent.memory.scope import all_roots, root_label
from harness.agent.model_calls import call_model
from harness.agent.roster.spec import DEFAULT_AGENT
from harness.errors import ConfigurationError
from harness.llm.errors import ModelCancelledError, TransientModelError
from harness.llm.types import AssistantTurn, Message
from harness.records.spend import ScopeId, spend_store
from harness.runtime import Concurrency, Context, cron, event, function
from harness.runtime.durations import parse_duration
from harness.settings import Settings, get_settings
from harness.workspace_files import unlink

log = logging.getLogger(__name__)


class DistillPlan(BaseModel, frozen=True):
    """What the `plan` step saw and decided; replayed as recorded."""

    due: bool
    reason: str
    memory_text: str
    pending: PendingLogs


def thresholds_of(settings: Settings) -> Thresholds:
    """The heartbeat's thresholds from settings. Raises ConfigurationError for a bad
    `HEARTBEAT_MAX_AGE`."""
    try:
        max_age = parse_duration(settings.heartbeat_max_age)
    except ValueError as exc:
        raise ConfigurationError(f"HEARTBEAT_MAX_AGE: {exc}") from exc
    return Thresholds(
        min_bytes=settings.heartbeat_min_bytes,
        max_age=timedelta(seconds=max_age),
        max_shrink=settings.memory_max_shrink,
    )


def plan_distillation(
    workspace: Path, now: datetime, thresholds: Thresholds, *, force: bool
) -> DistillPlan:
    """Read the positions, the new entries and MEMORY.md as they are now, and decide."""
    state = load_state(workspace)
    pending = pending_logs(workspace, state)
    decision = decide(pending, state, now, thresholds, force=force)
    memory_text = MemoryHistory(workspace).current() if decision.due else ""
    return DistillPlan(
        due=decision.due, reason=decision.reason, memory_text=memory_text, pending=pending
    )


def apply_distillation(
    workspace: Path,
    plan: DistillPlan,
    answer: str,
    *,
    max_shrink: float,
    now: datetime,
    run: str,
    cut_off: bool = False,
) -> dict[str, Any]:
    """Write the model's `answer` as the new MEMORY.md, or hold it back. Idempotent.

    Held back (kept under `memory/history/rejected/<run>.md`, positions not advanced, so the
    same notes are offered again later): an answer `check_candidate` refuses, or any answer
    when MEMORY.md was edited since `plan` read it (the edit is kept; the next distillation
    starts from it), or an answer `cut_off` by the output limit. Returns
    `{"status": "written" | "unchanged" | "held back", ...}`.
    """
    history = MemoryHistory(workspace)
    candidate = clean_candidate(answer)
    state = load_state(workspace)
    problem = check_candidate(candidate, plan.memory_text, max_shrink)
    if problem is None and cut_off:
        problem = "the answer was cut off by the model's output limit"
    if problem is None:
        try:
            record = history.replace(
                candidate,
                reason=f"distillation (run {run})",
                now=now,
                expected_sha=text_sha(plan.memory_text),
            )
        except MemoryChangedError:
            problem = "MEMORY.md was edited during the distillation; the edit is kept"
            log.warning("distillation held back (run %s): %s", run, problem)
            history.reject(candidate, reason=problem, name=run, now=now)
            return {"status": "held back", "reason": problem}  # the next tick retries
        else:
            save_state(workspace, advance(state, plan.pending, now))
            if record is None:
                return {"status": "unchanged"}
            return {"status": "written", "saved_previous_as": record.version}
    log.warning("distillation held back (run %s): %s", run, problem)
    history.reject(candidate, reason=problem, name=run, now=now)
    save_state(workspace, state.model_copy(update={"held_back_at": now}))
    return {"status": "held back", "reason": problem}


def prune_logs(workspace: Path, today: datetime, retention_days: int) -> list[str]:
    """Delete the expired, wholly distilled logs; return their names. Idempotent."""
    state = load_state(workspace)
    removed = []
    for path in expired_logs(workspace, state, today.date(), retention_days):
        unlink(workspace, path.relative_to(workspace))  # never through a link swapped in
        removed.append(path.name)
    if removed:
        positions = {k: v for k, v in state.positions.items() if k not in removed}
        save_state(workspace, state.model_copy(update={"positions": positions}))
    return removed


def _local_now(ctx: Context, settings: Settings) -> datetime:
    return ctx.now().astimezone(ZoneInfo(settings.agent_timezone))


def _think(ctx: Context, deps: AgentDeps, request: str) -> dict[str, Any]:
    """One distillation call; the agent's think step's rules for retries and fallback. With
    `MODEL_CALLS=gateway` the model gateway makes it and the run parks meanwhile, as a turn's
    think does: no worker thread waits, and the worker loads no model SDK for it."""
    offload = deps.settings.model_calls == "gateway"
    call = (DISTILL_PROMPT, [Message.user(request)], (), None)
    try:
        turn = call_model(ctx, deps.provider_for(ctx.attempt), offload, call)
    except ModelCancelledError:
        ctx.check_stop()
        raise
    except TransientModelError as exc:
        log.warning("distillation call failed (attempt %d): %s", ctx.attempt + 1, exc)
        raise
    return turn.model_dump(mode="json")


def _distill(ctx: Context, deps: AgentDeps, prefix: str, plan: DistillPlan) -> AssistantTurn:
    """The distillation call (a durable step), behind the default agent's daily budgets: a
    heartbeat spends as the agent does (`budget_gate`; the gate's stop turn when used up)."""
    request = render_request(plan.memory_text, plan.pending)

    def call() -> AssistantTurn:
        raw = ctx.step.run(prefix + "distill", _think, ctx, deps, request)
        return AssistantTurn.model_validate(raw)

    scopes: list[ScopeId] = [("agent", DEFAULT_AGENT)]
    gate = budget_gate(ctx, deps.settings, lambda: spend_store(ctx.runtime), scopes, None)
    return call() if gate is None else gate.guard(call)


_settings = get_settings()
thresholds_of(_settings)  # a bad HEARTBEAT_MAX_AGE stops the worker at start, not every run


@function(
    id=HEARTBEAT_FUNCTION,
    trigger=[
        cron(_settings.heartbeat_cron, tz=_settings.agent_timezone),
        event(DISTILL_EVENT),
    ],
    retries=3,
    concurrency=[Concurrency(limit=1)],
)
def heartbeat(ctx: Context) -> dict[str, Any]:
    """Distil new log entries into MEMORY.md when due; see the module docstring.

    Returns the outcome: `status` ("skipped", "written", "unchanged" or "held back"), the
    `reason`, and for a model call its `tokens` and `cost_usd`; `pruned` lists deleted logs.
    """
    deps = agent_deps()
    force = ctx.event.name == DISTILL_EVENT and bool(ctx.event.data.get("force"))
    # Which memories exist is decided once, so a replay distils the same ones.
    roots = ctx.step.run(
        "scopes", lambda: [str(r) for r in all_roots(deps.workspace, deps.private)]
    )
    result = _heartbeat_one(ctx, deps, Path(roots[0]), "", force=force)
    labels = [root_label(Path(root), deps.workspace, deps.private) for root in roots[1:]]
    chats = {
        label: _heartbeat_one(ctx, deps, Path(root), f"{label}/", force=force)
        for label, root in zip(labels, roots[1:], strict=True)
    }
    if chats:
        result["chats"] = chats
    return result


def _heartbeat_one(
    ctx: Context, deps: AgentDeps, workspace: Path, prefix: str, *, force: bool
) -> dict[str, Any]:
    """Distil one memory root (the workspace, or a chat's folder under per-chat memory); step
    ids are prefixed with the chat's folder so each root has its own journal entries."""
    settings = deps.settings
    thresholds = thresholds_of(settings)

    raw_plan = ctx.step.run(
        prefix + "plan",
        lambda: plan_distillation(
            workspace, _local_now(ctx, settings), thresholds, force=force
        ).model_dump(mode="json"),
    )
    plan = DistillPlan.model_validate(raw_plan)
    result: dict[str, Any] = {"status": "skipped", "reason": plan.reason}
    turn = _distill(ctx, deps, prefix, plan) if plan.due and deps.provider is not None else None
    if plan.due and deps.provider is None:
        result["reason"] = "no model is configured"
    elif turn is not None and stopped(turn):
        result["reason"] = "the agent's daily budget is used up"
    elif turn is not None:
        applied = ctx.step.run(
            prefix + "apply",
            lambda: apply_distillation(
                workspace,
                plan,
                turn.text,
                max_shrink=thresholds.max_shrink,
                now=_local_now(ctx, settings),
                run=ctx.run_id,
                cut_off=turn.stop_reason == "max_tokens",
            ),
        )
        result = {
            **applied,
            "reason": applied.get("reason", plan.reason),
            "tokens": turn.usage.model_dump(),
            "cost_usd": turn.cost_usd,
            "model": turn.model,
        }
    else:
        log.info("heartbeat skipped for %s: %s", prefix.rstrip("/") or "shared memory", plan.reason)
    result["pruned"] = ctx.step.run(
        prefix + "prune",
        lambda: prune_logs(workspace, _local_now(ctx, settings), settings.memory_retention_days),
    )
    return result
