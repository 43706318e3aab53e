"""The Chat Completions wire format: our neutral messages, tools and tool choice as the
`openai` SDK's request types (`harness.llm.openai` sends them). Pure: no network, and the
SDK only for its types, which the checker reads and nothing imports at run time."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.llm.types import Message, SystemBlock, ToolSpec

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionContentPartParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallParam,
        ChatCompletionToolChoiceOptionParam,
    )

_WIRE_CHOICES: dict[str, ChatCompletionToolChoiceOptionParam] = {
    "auto": "auto",
    "any": "required",
    "none": "none",
}


def convert_tools(tools: Sequence[ToolSpec]) -> list[ChatCompletionFunctionToolParam]:
    """Tool specs as Chat Completions function tools."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def convert_tool_choice(choice: str) -> ChatCompletionToolChoiceOptionParam:
    """A checked `tool_choice` (`harness.llm.tool_choice.check_tool_choice`) on the wire:
    `any` is Chat Completions' `required`; a tool's name becomes a named function choice."""
    return _WIRE_CHOICES.get(choice) or {"type": "function", "function": {"name": choice}}


def convert_messages(
    system: Sequence[SystemBlock], messages: Sequence[Message]
) -> list[ChatCompletionMessageParam]:
    """The system prompt and neutral messages on the wire. Each tool result becomes its own
    `role: tool` message; failed results are prefixed with `Error: `."""
    wire: list[ChatCompletionMessageParam] = []
    if system:
        wire.append({"role": "system", "content": "\n\n".join(b.text for b in system)})
    for message in messages:
        if message.role == "user" and any(image.data for image in message.images):
            parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": message.text}]
            for image in message.images:
                if image.data:
                    url = f"data:{image.media_type};base64,{image.data}"
                    parts.append({"type": "image_url", "image_url": {"url": url}})
            wire.append({"role": "user", "content": parts})
        elif message.role == "user":
            wire.append({"role": "user", "content": message.text})
        elif message.role == "tool":
            for result in message.tool_results:
                content = result.content or "(no output)"
                wire.append(
                    {
                        "role": "tool",
                        "tool_call_id": result.tool_call_id,
                        "content": f"Error: {content}" if result.is_error else content,
                    }
                )
        elif message.tool_calls:
            calls: list[ChatCompletionMessageToolCallParam] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
            wire.append(
                {
                    "role": "assistant",
                    "content": message.text if message.text.strip() else None,
                    "tool_calls": calls,
                }
            )
        else:
            wire.append({"role": "assistant", "content": message.text})
    return wire


def append_volatile(wire: list[ChatCompletionMessageParam], blocks: Sequence[SystemBlock]) -> None:
    """Send the volatile system text (the time, budget notes) after the conversation, in a
    user message of its own, so that the system message and the whole history stay a
    byte-stable prefix for automatic prefix caching. Mutates `wire`."""
    if blocks:
        text = "\n\n".join(b.text for b in blocks)
        wire.append({"role": "user", "content": f"<system-reminder>\n{text}\n</system-reminder>"})
