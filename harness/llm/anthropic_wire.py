"""The Anthropic Messages API's wire form: neutral messages, tools and system text as the
request body, with its cache breakpoints. Pure: no network, and the SDK only for its types.

The stable system blocks end with a `cache_control` breakpoint, so that tools plus stable
system text form a byte-identical, cacheable prefix from turn to turn; the conversation
carries two more (`mark_conversation`), three of the four allowed. The volatile system text
goes after all of them (`append_volatile`). Each message's blocks are rendered once and
remembered (`_BLOCKS`), and each call's wire messages are reused by the next call of the same
conversation (`_RENDERINGS`), so a long history costs a join, not a conversion.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.llm.memo import IdentityMemo
from harness.llm.types import Message, SystemBlock, ToolSpec

if TYPE_CHECKING:  # the SDK's request types, for the checker only: nothing here calls it
    from anthropic.types import (
        ImageBlockParam,
        TextBlockParam,
        ToolChoiceParam,
        ToolParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )

PROVIDER = "anthropic"


def convert_system(blocks: Sequence[SystemBlock]) -> list[TextBlockParam]:
    """System blocks on the wire, with a cache breakpoint on the last stable block."""
    stable = [i for i, block in enumerate(blocks) if not block.volatile]
    wire: list[TextBlockParam] = []
    for i, block in enumerate(blocks):
        param: TextBlockParam = {"type": "text", "text": block.text}
        if stable and i == stable[-1]:
            param["cache_control"] = {"type": "ephemeral"}
        wire.append(param)
    return wire


def convert_tools(tools: Sequence[ToolSpec]) -> list[ToolParam]:
    """Tool specs on the wire, in the given order (order is part of the cached prefix)."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def convert_tool_choice(choice: str) -> ToolChoiceParam:
    """A checked `tool_choice` (`harness.llm.tool_choice.check_tool_choice`) on the wire."""
    if choice == "auto":
        return {"type": "auto"}
    if choice == "any":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


def request_body(
    *,
    model: str,
    max_tokens: int,
    system: Sequence[SystemBlock],
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    temperature: float | None = None,
    tool_choice: str | None = None,
) -> bytes:
    """A streaming Messages API request as JSON (`temperature` and `tool_choice`, checked by
    `check_tool_choice`, only when set): the stable
    system blocks, the tools, and the conversation with its cache breakpoints
    (`mark_conversation`) and the volatile system text at its end (`append_volatile`). Each
    message is rendered once and remembered, so sending a long history again costs a join,
    not a conversion."""
    head: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True}
    if temperature is not None:
        head["temperature"] = temperature
    stable = convert_system([b for b in system if not b.volatile])
    if stable:
        head["system"] = stable
    if tools:
        head["tools"] = convert_tools(tools)
    if tool_choice is not None:
        head["tool_choice"] = convert_tool_choice(tool_choice)
    wire = mark_conversation(list(_RENDERINGS.render(messages, model)))
    append_volatile(wire, [b for b in system if b.volatile])
    rendered = _dumps(head)
    conversation = "[" + ",".join(m.json for m in wire) + "]"
    return (rendered[:-1] + ',"messages":' + conversation + "}").encode()


def messages_json(messages: Sequence[Message], model: str) -> str:
    """Neutral messages on the wire, as a JSON array, without cache breakpoints. Tool results
    become `tool_result` blocks in a user message; consecutive messages that land on the same
    wire role are merged, with tool results first, as the API requires; an empty tool result
    is sent as `(no output)`. Reasoning blocks are kept only when they came from `model`.

    The wire messages of a recent call that began with the same message objects are reused
    for the part both calls share, so a growing conversation is rendered once."""
    return "[" + ",".join(m.json for m in _RENDERINGS.render(messages, model)) + "]"


def convert_messages(messages: Sequence[Message], model: str) -> list[dict[str, Any]]:
    """`messages_json` as data: the wire messages the request carries, before breakpoints."""
    wire: list[dict[str, Any]] = json.loads(messages_json(messages, model))
    return wire


class WireMessage:
    """One message on the wire: its role, its blocks as (is a tool result, block JSON), and
    its JSON. Shared between calls: change a copy (`with_last_block_cached`, `with_block`)."""

    __slots__ = ("blocks", "json", "role")

    def __init__(self, role: str, blocks: list[tuple[bool, str]]) -> None:
        self.role = role
        self.blocks = blocks
        self.json = '{"role":"' + role + '","content":[' + ",".join(b for _, b in blocks) + "]}"

    def with_last_block_cached(self) -> WireMessage:
        """A copy whose last block carries a cache breakpoint."""
        is_result, last = self.blocks[-1]
        marked = last[:-1] + ',"cache_control":{"type":"ephemeral"}}'
        return WireMessage(self.role, [*self.blocks[:-1], (is_result, marked)])

    def with_block(self, block: dict[str, Any]) -> WireMessage:
        """A copy with `block` added last."""
        return WireMessage(self.role, [*self.blocks, (False, _dumps(block))])


def mark_conversation(wire: list[WireMessage]) -> list[WireMessage]:
    """Put cache breakpoints on the last block of the last user message (written to the
    cache by this call) and of the user message before the previous assistant reply (the
    point the previous call wrote), so each call reads the whole earlier conversation from
    the cache, however many blocks the last turn added. Changes and returns `wire`."""
    for position in (-3, -1):
        if len(wire) < -position or wire[position].role != "user":
            continue
        if wire[position].blocks:
            wire[position] = wire[position].with_last_block_cached()
    return wire


def append_volatile(wire: list[WireMessage], blocks: Sequence[SystemBlock]) -> None:
    """Send the volatile system text (the time, budget notes) as a last text block of the
    last user message, after every cache breakpoint: in `system` it would sit before the
    conversation and change the cached prefix on every call. Changes `wire`."""
    if not blocks or not wire or wire[-1].role != "user":
        return
    text = "\n\n".join(b.text for b in blocks)
    block = {"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}
    wire[-1] = wire[-1].with_block(block)


@dataclass
class _Rendering:
    """The wire messages of one call: `starts[i]` is the index of the first neutral message
    that `wire[i]` holds."""

    model: str
    messages: list[Message]
    starts: list[int]
    wire: list[WireMessage]


class _Renderings:
    """The last few renderings, one per conversation (keyed by its first message). Thread-safe."""

    def __init__(self, size: int = 32) -> None:
        self._size = size
        self._items: OrderedDict[int, _Rendering] = OrderedDict()
        self._lock = threading.Lock()

    def render(self, messages: Sequence[Message], model: str) -> list[WireMessage]:
        """The wire messages of `messages`, reusing those of the last rendering of the same
        conversation for the part the two share."""
        if not messages:
            return []
        with self._lock:
            last = self._items.get(id(messages[0]))
        starts: list[int] = []
        wire: list[WireMessage] = []
        begin = 0
        if last is not None and last.model == model and last.messages[0] is messages[0]:
            same = 0
            for old, new in zip(last.messages, messages, strict=False):
                if old is not new:
                    break
                same += 1
            # keep the wire messages that end within the shared part, but never the last one:
            # it may take in the messages that follow it
            keep = 0
            while keep + 1 < len(last.starts) and last.starts[keep + 1] <= same:
                keep += 1
            if keep:
                starts, wire, begin = last.starts[:keep], last.wire[:keep], last.starts[keep]
        role, blocks, first = "", [], begin
        for i in range(begin, len(messages)):
            this = "assistant" if messages[i].role == "assistant" else "user"
            content = _content(messages[i], model)
            if this == role:
                blocks.extend(content)
                blocks.sort(key=lambda block: not block[0])
                continue
            if role:
                starts.append(first)
                wire.append(WireMessage(role, blocks))
            role, blocks, first = this, content, i
        starts.append(first)
        wire.append(WireMessage(role, blocks))
        with self._lock:
            self._items[id(messages[0])] = _Rendering(model, list(messages), starts, wire)
            self._items.move_to_end(id(messages[0]))
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return wire


_RENDERINGS = _Renderings()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _content(message: Message, model: str) -> list[tuple[bool, str]]:
    """(is a tool result, block JSON) for each block of the message on the wire."""
    blocks = [
        (False, _dumps(reasoning.block))  # echoed as received
        for reasoning in message.reasoning
        if reasoning.provider == PROVIDER and reasoning.model == model
    ]
    blocks.extend(_BLOCKS(message))
    return blocks


def _blocks(message: Message) -> tuple[tuple[bool, str], ...]:
    """The message's blocks other than reasoning, rendered (remembered per message in
    `_BLOCKS`: the same history is sent on every call)."""
    blocks: list[tuple[bool, str]] = []
    for result in message.tool_results:
        param: ToolResultBlockParam = {
            "type": "tool_result",
            "tool_use_id": result.tool_call_id,
            "content": result.content or "(no output)",
        }
        if result.is_error:
            param["is_error"] = True
        blocks.append((True, _dumps(param)))
    for image in message.images:
        if image.data:  # images come before the text that talks about them
            source: dict[str, str] = {
                "type": "base64",
                "media_type": image.media_type,
                "data": image.data,
            }
            block: ImageBlockParam = {"type": "image", "source": source}  # type: ignore[typeddict-item]
            blocks.append((False, _dumps(block)))
    if message.text.strip():
        text: TextBlockParam = {"type": "text", "text": message.text}
        blocks.append((False, _dumps(text)))
    for call in message.tool_calls:
        use: ToolUseBlockParam = {
            "type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments
        }  # fmt: skip
        blocks.append((False, _dumps(use)))
    return tuple(blocks)


_BLOCKS: IdentityMemo[Message, tuple[tuple[bool, str], ...]] = IdentityMemo(_blocks)
