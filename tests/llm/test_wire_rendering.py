"""The Anthropic request body: a growing conversation rendered once, the same as from scratch."""

from __future__ import annotations

import json

from harness.llm.anthropic_wire import messages_json
from harness.llm.types import Message, ToolCall, ToolResult


def _fresh(messages: list[Message]) -> list[Message]:
    """Equal messages that are new objects, so nothing remembered about the originals applies."""
    return [m.model_copy() for m in messages]


def _turn(i: int) -> list[Message]:
    call = ToolCall(id=f"toolu_{i}", name="ls", arguments={"path": "."})
    return [
        Message.user(f"question {i}"),
        Message.assistant(tool_calls=(call,)),
        Message.tool(ToolResult(tool_call_id=call.id, content=f"listing {i}")),
        Message.assistant(f"answer {i}"),
    ]


def test_a_grown_conversation_renders_as_it_would_from_scratch() -> None:
    # Given a conversation rendered once
    conversation = [m for i in range(5) for m in _turn(i)]
    messages_json(conversation, "m")
    # When it grows by a message that merges into its last wire message (a second assistant
    # message after the answer), two user messages that merge, and a whole new turn
    extra = [Message.assistant("and also"), Message.user("one"), Message.user("more")]
    grown = [*conversation, *extra, *_turn(5)]
    # Then the rendering equals that of equal, never-seen messages
    assert json.loads(messages_json(grown, "m")) == json.loads(messages_json(_fresh(grown), "m"))


def test_a_conversation_changed_in_the_middle_renders_the_change() -> None:
    # Given a conversation rendered once
    conversation = [m for i in range(4) for m in _turn(i)]
    messages_json(conversation, "m")
    # When an old tool result is replaced (as pruning does) and the rest kept
    changed = list(conversation)
    changed[6] = Message.tool(ToolResult(tool_call_id="toolu_1", content="[cleared]"))
    # Then the new content is sent, and the merged user turns stay in the API's order
    wire = json.loads(messages_json(changed, "m"))
    assert wire == json.loads(messages_json(_fresh(changed), "m"))
    assert {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[cleared]"} in [
        block for message in wire for block in message["content"]
    ]
