"""Compacting a turn's conversation: whether it is due (`compaction_due`, for the step that
records the decision) and the compaction itself (`compacted`): the silent memory flush
(`memory.flush`), the summary of the older conversation, each a durable step behind the
turn's budget guard (`DurableTurn.guard`), so they are checked and counted as every other
model call is, and the session rewritten in a step.

When a budget is used up the guard makes no call: the summary is None (the caller leaves the
conversation as it is, and the turn's next `think` stops with the budget's message) and the
flush writes no notes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.agent.compaction import (
    SUMMARY_PROMPT,
    apply_compaction,
    needs_compaction,
    plan_compaction,
    render_for_summary,
)
from harness.agent.memory.flush import FLUSH_PROMPT, flush_request, remember_calls, remember_spec
from harness.agent.memory.notes import memory_context
from harness.errors import StepFailedError
from harness.llm.types import AssistantTurn, Message
from harness.tools.base import ToolContext

if TYPE_CHECKING:
    from harness.agent.turn import DurableTurn

log = logging.getLogger(__name__)


def compaction_due(turn: DurableTurn, conversation: list[Message], forced: bool = False) -> bool:
    """Whether to compact `conversation` before the turn's next think (always when `forced`,
    if it has an older part); call inside the step that records the decision. Sizes the
    prompt that think will send (`DurableTurn.prompt_chars`): in the step, so a replay that
    finds the decision recorded builds none."""
    due = forced or needs_compaction(
        conversation,
        context_tokens=turn.deps.settings.agent_context_tokens,
        system_chars=turn.prompt_chars(),
    )
    return due and bool(plan_compaction(conversation).old)


def compacted(turn: DurableTurn, conversation: list[Message], *, key: str) -> list[Message]:
    """`conversation` with its older part summarised into the turn's session (the memory
    flushed first; the rewrite a "compact" step, idempotent by `key`); as it is when a budget
    is used up (the next think stops the turn). Call it only where a recorded decision says
    compaction is due: it takes the same steps on every execution of the run, although a
    replay after the rewrite finds no older part left (the steps' records answer for it);
    returning early there would shift every later step onto another's record."""
    plan = plan_compaction(conversation)
    flush_memory(turn, plan.old)
    summary = turn.summarize(render_for_summary(plan.old))
    if summary is None:
        return conversation
    store, session, run_id = turn.sessions, turn.session_key, turn.ctx.run_id
    assert session is not None, "only a turn with a session compacts"

    def apply() -> int:
        apply_compaction(store, session, summary, plan, run_id=run_id, key=key)
        return store.count(session)

    count = turn.ctx.step.run("compact", apply)
    log.info("run %s compacted session %s", run_id, session)
    return store.messages(session, upto=count)


def summarize(turn: DurableTurn, transcript: str, step: str = "summarize") -> str | None:
    """`transcript` summarised by one model call (the compaction prompt) in durable step
    `step`, behind the turn's budget guard; None when a budget is used up (no call made).
    Raises `StepFailedError` when the call fails past its retries."""

    def complete() -> dict[str, Any]:
        summary = turn.complete(SUMMARY_PROMPT, [Message.user(transcript)], ())
        return summary.model_dump(mode="json")

    done = turn.guard(_in_step(turn, step, complete))
    return None if done is None else done.text.strip() or "(no summary)"


def flush_memory(turn: DurableTurn, old: list[Message]) -> None:
    """The silent turn before compaction (see `memory.flush`): notes only, best effort (a
    failed or refused call writes none)."""
    spec = remember_spec(turn.tool_specs())
    if spec is None:
        return
    request = flush_request(old, memory_context(turn.memory_root, turn.now()))

    def complete() -> dict[str, Any]:
        return turn.complete(FLUSH_PROMPT, request, [spec]).model_dump(mode="json")

    try:
        done = turn.guard(_in_step(turn, "memory-flush", complete))
    except StepFailedError as exc:
        log.warning("run %s: memory flush before compaction failed: %s", turn.ctx.run_id, exc)
        return
    for call in remember_calls(done) if done is not None else []:
        turn.ctx.step.run("memory-note", _note, turn, call.name, call.arguments)


def _in_step(
    turn: DurableTurn, step: str, complete: Callable[[], dict[str, Any]]
) -> Callable[[], AssistantTurn]:
    return lambda: AssistantTurn.model_validate(turn.ctx.step.run(step, complete))


def _note(turn: DurableTurn, name: str, arguments: dict[str, Any]) -> bool:
    """Run a `remember` call of the silent turn (no progress report); True if it failed."""
    tool_ctx = ToolContext(turn.deps.workspace, turn.ctx.cancelled, extras=turn.extras())
    outcome = turn.registry.execute(name, arguments, tool_ctx)
    if outcome.is_error:
        log.warning("run %s: memory flush note failed: %s", turn.ctx.run_id, outcome.content)
    return outcome.is_error
