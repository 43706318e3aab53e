"""Shrinking old tool results before each model call.

Pruning works on the in-memory copy sent to the model and is never written to the session:
the session keeps what really happened, and pruning can be redone with other limits at any
time. The last few turns are never touched, so the model always sees its recent work in full.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from harness.agent.transcript import turn_boundaries
from harness.llm.memo import IdentityMemo
from harness.llm.types import Message, ToolResult


def cleared_marker(chars: int) -> str:
    """The text that replaces a cleared tool result of `chars` characters."""
    return f"[tool result cleared to save context: {chars} chars]"


def omitted_marker(chars: int) -> str:
    """The line that stands for the `chars` characters cut out of the middle of a result."""
    return f"\n[... {chars} chars omitted ...]\n"


def prune_tool_results(
    messages: Sequence[Message],
    *,
    keep_turns: int = 3,
    max_result_chars: int = 4000,
    keep_head: int = 1500,
    keep_tail: int = 1500,
    total_budget: int = 50000,
) -> list[Message]:
    """Return a copy of `messages` with the tool results before the last `keep_turns` turns cut.

    Messages from the start of the `keep_turns`-th last user message on are never touched; with
    fewer turns than that, nothing is. Of the older tool results:
    - if their contents together exceed `total_budget` characters, each is replaced by
      `cleared_marker(len)` (a result already shorter than its marker is left alone);
    - otherwise each one longer than `max_result_chars` keeps its first `keep_head` and last
      `keep_tail` characters around `omitted_marker(n)`.
    Tool call ids, `is_error`, and message order are kept. Changed messages are new objects;
    unchanged ones are the same objects. Pruning its own output changes nothing as long as
    `keep_head + keep_tail` leaves room for the marker (about 40 characters) under
    `max_result_chars`, as the defaults do.
    Raises `ValueError` when `keep_head + keep_tail > max_result_chars` or a limit is negative.
    """
    if min(keep_turns, max_result_chars, keep_head, keep_tail, total_budget) < 0:
        raise ValueError("pruning limits must not be negative")
    if keep_head + keep_tail > max_result_chars:
        raise ValueError(
            f"keep_head + keep_tail ({keep_head + keep_tail}) must not exceed "
            f"max_result_chars ({max_result_chars})"
        )
    starts = turn_boundaries(messages)
    if keep_turns == 0:
        protected_from = len(messages)
    elif len(starts) < keep_turns:
        protected_from = 0
    else:
        protected_from = starts[-keep_turns]
    old = messages[:protected_from]
    old_chars = sum(len(r.content) for m in old for r in m.tool_results)
    prune = _pruner(old_chars > total_budget, max_result_chars, keep_head, keep_tail)
    out = [prune(m) if m.tool_results else m for m in old]
    out.extend(messages[protected_from:])
    return out


@functools.lru_cache(maxsize=16)
def _pruner(
    clear: bool, max_result_chars: int, keep_head: int, keep_tail: int
) -> IdentityMemo[Message, Message]:
    """The pruning of one old message under these limits, remembered per message: the same
    old messages are pruned again before every model call."""

    def shrink(result: ToolResult) -> ToolResult:
        size = len(result.content)
        if clear:
            marker = cleared_marker(size)
            if size <= len(marker):
                return result
            return result.model_copy(update={"content": marker})
        if size <= max_result_chars:
            return result
        head = result.content[:keep_head]
        tail = result.content[size - keep_tail :]
        content = head + omitted_marker(size - keep_head - keep_tail) + tail
        if len(content) >= size:
            return result
        return result.model_copy(update={"content": content})

    def prune(message: Message) -> Message:
        results = tuple(shrink(r) for r in message.tool_results)
        if any(new is not was for new, was in zip(results, message.tool_results, strict=True)):
            return message.model_copy(update={"tool_results": results})
        return message

    return IdentityMemo(prune)
