"""Compaction: replacing the old part of a long session with a model-written checkpoint.

The caller decides (`needs_compaction`), splits (`plan_compaction`), asks the model for a
summary (system `SUMMARY_PROMPT`, user `render_for_summary(plan.old)`) inside a durable step,
then writes the result with `apply_compaction` in another. The whole session file is compacted,
not a window of it, and the old file is archived, never destroyed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from harness.agent.session import COVERED_IDEM_LIMIT, CompactionLine, SessionLine, SessionStore
from harness.agent.transcript import estimate_tokens, message_chars
from harness.llm.types import Message

log = logging.getLogger(__name__)

RESULT_CHARS_FOR_SUMMARY = 2000

SUMMARY_PROMPT = """\
You are compacting a long conversation between a user and an AI agent that uses tools. The \
conversation so far is in the next message. Write a checkpoint that lets the agent carry on \
as if it remembered everything that matters. If the conversation starts with an earlier \
"[Conversation summary]", fold what is still true of it into the new checkpoint.

Use exactly these sections, in this order:

## Goal
What the user wants, in their terms.

## Constraints & Preferences
Requirements, limits and preferences the user stated or the work revealed.

## Progress
### Done
### In Progress
### Blocked

## Key Decisions
Each decision with the reason for it.

## Next Steps
What the agent should do next, in order.

## Critical Context
Anything else the agent needs to continue: facts learned, values, open questions.

Preserve exact file paths, function names, identifiers, commands, URLs and error messages, \
character for character. Be concise and factual; do not invent anything that is not in the \
conversation. Reply with the checkpoint only."""


@dataclass(frozen=True)
class CompactionPlan:
    """A split of the conversation: `old` is summarised, `recent` is kept word for word.

    `old + recent` is the conversation planned from. `old` is empty when there is nothing to
    compact. `recent` never starts with a tool message.
    """

    old: list[Message]
    recent: list[Message]


def needs_compaction(
    messages: Sequence[Message],
    *,
    context_tokens: int = 150000,
    threshold: float = 0.8,
    system_chars: int = 0,
) -> bool:
    """True when the estimated size of `messages` plus the system prompt is strictly above
    `threshold` of `context_tokens` (by default: more than 120,000 tokens)."""
    return estimate_tokens(messages, system_chars) > context_tokens * threshold


def plan_compaction(
    messages: Sequence[Message], *, keep_recent_tokens: int = 20000
) -> CompactionPlan:
    """Split `messages` so that `recent` is the longest suffix of at most `keep_recent_tokens`.

    `recent` starts at a user message when one fits; otherwise (the last turn alone is
    larger) at an assistant message inside it; and when even that does not fit, at the last
    non-tool message. So `recent` never starts with a tool message, and an assistant message
    with tool calls always stays with the tool messages after it. `recent` is never empty
    unless `messages` is. When everything fits, or no cut is possible, `old` is empty. Pure.
    """
    n = len(messages)
    suffix_chars = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix_chars[i] = suffix_chars[i + 1] + message_chars(messages[i])
    budget_chars = keep_recent_tokens * 4

    def earliest(role: str) -> int | None:
        fits = [i for i in range(1, n) if messages[i].role == role]
        fits = [i for i in fits if suffix_chars[i] <= budget_chars]
        return min(fits, default=None)

    if suffix_chars[0] <= budget_chars:
        return CompactionPlan(old=[], recent=list(messages))
    cut = earliest("user")
    if cut is None:
        cut = earliest("assistant")
    if cut is None:
        cut = max((i for i in range(1, n) if messages[i].role != "tool"), default=0)
    if cut == 0:
        return CompactionPlan(old=[], recent=list(messages))
    return CompactionPlan(old=list(messages[:cut]), recent=list(messages[cut:]))


def _clip(text: str, limit: int = RESULT_CHARS_FOR_SUMMARY) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[-half:]}"


def render_for_summary(old: Sequence[Message]) -> str:
    """`old` as a plain-text transcript for the summarising model.

    Each message is headed `[user]`, `[assistant]` or `[tool result: <name>]`; tool calls are
    shown as `[tool call: <name>] <arguments JSON>`; each tool result is cut to about 2,000
    characters (its head and tail). Pure; never raises.
    """
    names: dict[str, str] = {}
    parts: list[str] = []
    for message in old:
        if message.role == "user":
            parts.append(f"[user]\n{message.text}")
        elif message.role == "assistant":
            body = [message.text] if message.text.strip() else []
            for call in message.tool_calls:
                names[call.id] = call.name
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                body.append(f"[tool call: {call.name}] {_clip(arguments)}")
            parts.append("[assistant]\n" + "\n".join(body))
        else:
            for result in message.tool_results:
                name = names.get(result.tool_call_id, "unknown tool")
                label = f"{name}, error" if result.is_error else name
                parts.append(f"[tool result: {label}]\n{_clip(result.content)}")
    return "\n\n".join(parts)


def compaction_key(summary: str, plan: CompactionPlan) -> str:
    """The idempotency key `apply_compaction` uses for `summary` and `plan` by default."""
    digest = hashlib.sha256(summary.encode())
    for message in plan.recent:
        digest.update(b"\n" + message.model_dump_json().encode())
    return "compaction:" + digest.hexdigest()[:24]


def apply_compaction(
    store: SessionStore,
    session_key: str,
    summary: str,
    plan: CompactionPlan,
    *,
    run_id: str | None,
    key: str | None = None,
) -> bool:
    """Replace the session with a checkpoint holding `summary`, then the recent lines.

    `plan` must come from `plan_compaction(store.messages(session_key))`. The recent lines are
    the stored ones (their timestamps, ids and meta kept), found where `plan.recent` sits in
    the file after the latest checkpoint, plus any line appended since the plan was made, so
    nothing is lost. The old file is archived by the store. Idempotent: when the latest
    checkpoint already carries `meta["idem"] == key` (default `compaction_key(summary, plan)`)
    nothing is written. Returns True when the file was replaced; False when there was nothing
    to do, or, with a warning, when `plan.recent` is not in the file (it was planned from
    something else).
    """
    if not plan.old or not plan.recent:
        return False
    idem = key or compaction_key(summary, plan)

    def change(
        lines: list[SessionLine | CompactionLine],
    ) -> list[SessionLine | CompactionLine] | None:
        checkpoints = [i for i, line in enumerate(lines) if isinstance(line, CompactionLine)]
        previous = lines[checkpoints[-1]] if checkpoints else None
        if previous is not None and previous.meta.get("idem") == idem:
            return None
        tail = lines[checkpoints[-1] + 1 :] if checkpoints else lines
        start = _find_recent(tail, plan, summarised=previous is not None)
        if start is None:
            log.warning("session %s: compaction plan does not match the file; skipped", session_key)
            return None
        covered = list(previous.covered_idem) if isinstance(previous, CompactionLine) else []
        covered += [str(line.meta["idem"]) for line in tail[:start] if "idem" in line.meta]
        checkpoint = CompactionLine(
            summary=summary,
            run_id=run_id,
            meta={"idem": idem},
            covered_idem=tuple(covered[-COVERED_IDEM_LIMIT:]),
        )
        return [checkpoint, *tail[start:]]

    return store.update(session_key, change)


def _find_recent(
    tail: list[SessionLine | CompactionLine], plan: CompactionPlan, *, summarised: bool
) -> int | None:
    """The index in `tail` where `plan.recent` starts: where the plan put it if it is still
    there, else its first occurrence (keeping too much is safe; dropping is not)."""
    messages = [line.message if isinstance(line, SessionLine) else None for line in tail]
    size = len(plan.recent)
    expected = len(plan.old) - (1 if summarised else 0)
    if messages[expected : expected + size] == plan.recent:
        return expected
    for i in range(len(messages) - size + 1):
        if messages[i : i + size] == plan.recent:
            return i
    return None
