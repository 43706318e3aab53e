"""Keeping a conversation valid for the providers, and measuring it.

Both providers insist that every tool call an assistant message makes is answered, once, by the
message right after it, and that no result answers a call that was never made. A run cancelled
mid-tool, or a crash between two durable steps, can leave a transcript that breaks this;
`repair` mends it before the transcript is sent.

Consecutive user messages are left as they are: both providers accept them once converted
(Anthropic merges them into one turn, OpenAI takes them as separate messages).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from harness.llm.memo import IdentityMemo
from harness.llm.types import Message, ToolCall, ToolResult

log = logging.getLogger(__name__)

CANCELLED_RESULT = "cancelled: the run was interrupted before this tool finished"


def cancelled_result(call: ToolCall) -> ToolResult:
    """The synthetic error result that stands in for a tool call that never finished."""
    return ToolResult(tool_call_id=call.id, content=CANCELLED_RESULT, is_error=True)


def repair(messages: Sequence[Message]) -> list[Message]:
    """Return `messages` with every tool call answered exactly once by the next message.

    After each assistant message with tool calls comes exactly one tool message holding one
    result per call, in call order: the first result found for each call in the tool messages
    that follow it, or `cancelled_result(call)` when there is none. Results whose call is not
    in the preceding assistant message, and tool messages with no assistant message with tool
    calls before them, are dropped. Other messages are kept, in order, as the same objects.
    Call ids are assumed unique within one assistant message. Pure; never raises.
    """
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.role == "tool":
            log.debug("dropping %d orphan tool results", len(message.tool_results))
            continue
        out.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        following: list[Message] = []
        while i < len(messages) and messages[i].role == "tool":
            following.append(messages[i])
            i += 1
        if len(following) == 1 and [r.tool_call_id for r in following[0].tool_results] == [
            c.id for c in message.tool_calls
        ]:
            out.append(following[0])  # the usual case: one answer per call, in order
            continue
        wanted = {call.id for call in message.tool_calls}
        found: dict[str, ToolResult] = {}
        for result in (r for m in following for r in m.tool_results):
            if result.tool_call_id in wanted:
                found.setdefault(result.tool_call_id, result)
        answered = tuple(found.get(c.id) or cancelled_result(c) for c in message.tool_calls)
        if len(following) == 1 and following[0].tool_results == answered:
            out.append(following[0])
        else:
            out.append(Message.tool(*answered))
    return out


def message_chars(message: Message) -> int:
    """The characters of `message` a model reads: text, tool names, arguments JSON, results.

    Reasoning blocks are not counted: providers drop or discount them outside the current
    tool-use cycle. Remembered per message, so measuring a long conversation again is cheap.
    """
    return _CHARS(message)


def _count_chars(message: Message) -> int:
    chars = len(message.text)
    for call in message.tool_calls:
        chars += len(call.name) + len(json.dumps(call.arguments, ensure_ascii=False))
    for result in message.tool_results:
        chars += len(result.content)
    return chars


_CHARS: IdentityMemo[Message, int] = IdentityMemo(_count_chars)


def estimate_tokens(messages: Sequence[Message], system_chars: int = 0) -> int:
    """A rough token count: characters / 4, rounded up, over `messages` plus `system_chars`.

    Good enough to decide when to compact; not a tokenizer. Never raises.
    """
    chars = system_chars + sum(message_chars(m) for m in messages)
    return -(-chars // 4)


def turn_boundaries(messages: Sequence[Message]) -> list[int]:
    """The indexes of the user messages, in order: where each turn starts.

    A turn is a user message and everything up to the next user message. Messages before the
    first user message belong to no turn.
    """
    return [i for i, m in enumerate(messages) if m.role == "user"]
