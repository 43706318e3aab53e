"""The Anthropic Messages API: the only module that touches the `anthropic` SDK.

Requests always stream; the SDK never retries (`max_retries=0`), the caller's durable step
does. The stable part of the system prompt ends with a `cache_control` breakpoint so that
tools plus stable system text form a byte-identical, cacheable prefix from turn to turn; the
conversation carries two more (see `mark_conversation`), three of the four allowed.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
from anthropic.types import (
    ImageBlockParam,
    RawMessageStreamEvent,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from anthropic.types import Message as WireMessageModel

from harness.llm.errors import (
    ContextOverflowError,
    ModelCancelledError,
    ModelError,
    TransientModelError,
    permanent_error,
    redact_secret,
    retry_after_seconds,
)
from harness.llm.guard import check_base_url
from harness.llm.memo import IdentityMemo
from harness.llm.pricing import cost_usd
from harness.llm.provider import SystemPrompt, TextSink, system_blocks
from harness.llm.streaming import StreamCancelled, events, parse_arguments
from harness.llm.types import (
    AssistantTurn,
    Message,
    ReasoningBlock,
    StopReason,
    SystemBlock,
    ToolCall,
    ToolSpec,
    Usage,
)

PROVIDER = "anthropic"
API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-5-5"
_NO_KEY = "no-key-configured"  # keyless gateways still need the SDK to have something
_REASONING_TYPES = ("thinking", "redacted_thinking")
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "refusal": "end",
    "pause_turn": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}
_TRANSIENT_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


class AnthropicProvider:
    """A `ModelProvider` for the Anthropic Messages API or a server that speaks it.

    Raises `PermanentModelError` at construction when real model calls are forbidden
    (see `harness.llm.guard`) and `base_url` is not on loopback. Thread-safe: one instance
    may serve concurrent `complete` calls.
    """

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        max_tokens: int = 8192,
        timeout: float = 600.0,
    ) -> None:
        url = base_url or DEFAULT_BASE_URL
        check_base_url(url)
        self._model = model
        self._max_tokens = max_tokens
        self._secret = api_key
        self._client = anthropic.Anthropic(
            api_key=api_key or _NO_KEY, base_url=url, max_retries=0, timeout=timeout
        )

    @property
    def name(self) -> str:
        """Always `anthropic`."""
        return PROVIDER

    @property
    def model(self) -> str:
        """The model every call asks for."""
        return self._model

    def complete(
        self,
        *,
        system: SystemPrompt,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        on_text: TextSink | None = None,
    ) -> AssistantTurn:
        """See `ModelProvider.complete`."""
        body = request_body(
            model=self._model,
            max_tokens=max_tokens or self._max_tokens,
            system=system_blocks(system),
            messages=messages,
            tools=tools,
        )

        def open_stream() -> anthropic.Stream[RawMessageStreamEvent]:
            # The body is rendered here, not by `messages.create`: the SDK would copy and encode
            # the whole history again on every call.
            return self._client.post(
                "/v1/messages",
                cast_to=WireMessageModel,
                content=body,
                stream=True,
                stream_cls=anthropic.Stream[RawMessageStreamEvent],
            )

        builder = _TurnBuilder(self._model, on_text)
        try:
            for event in events(open_stream, cancel):
                builder.feed(event)
        except StreamCancelled:
            raise ModelCancelledError(builder.partial(), provider=PROVIDER) from None
        except (anthropic.APIError, httpx2.HTTPError) as exc:
            raise classify_error(exc, self._secret) from exc
        except ValueError as exc:  # an event that does not decode or validate
            raise TransientModelError(
                f"anthropic sent a malformed stream: {exc}", provider=PROVIDER
            ) from exc
        return builder.finish()

    def close(self) -> None:
        """Release the HTTP connections. Idempotent."""
        self._client.close()


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


def request_body(
    *,
    model: str,
    max_tokens: int,
    system: Sequence[SystemBlock],
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
) -> bytes:
    """A streaming Messages API request as JSON: the stable system blocks, the tools, and the
    conversation with its cache breakpoints (`mark_conversation`) and the volatile system text
    at its end (`append_volatile`). Each message is rendered once and remembered, so sending a
    long history again costs a join, not a conversion."""
    head: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True}
    stable = convert_system([b for b in system if not b.volatile])
    if stable:
        head["system"] = stable
    if tools:
        head["tools"] = convert_tools(tools)
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


class _TurnBuilder:
    """Assembles an `AssistantTurn` from raw stream events."""

    def __init__(self, model: str, on_text: TextSink | None = None) -> None:
        self._on_text = on_text
        self._requested = model  # reasoning is echoed only to the model that was asked
        self._model = model
        self._blocks: dict[int, dict[str, Any]] = {}
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._stopped = False

    def feed(self, event: RawMessageStreamEvent) -> None:
        if event.type == "message_start":
            self._model = event.message.model or self._model
            self._take_usage(event.message.usage.model_dump())
        elif event.type == "content_block_start":
            block = event.content_block.model_dump(exclude_none=True)
            if block["type"] == "tool_use":
                block["partial_json"] = ""
            self._blocks[event.index] = block
        elif event.type == "content_block_delta":
            delta = event.delta.model_dump()
            self._apply_delta(self._blocks.get(event.index), delta)
            if self._on_text is not None and delta.get("type") == "text_delta" and delta["text"]:
                self._on_text(delta["text"])
        elif event.type == "message_delta":
            self._stop_reason = event.delta.stop_reason or self._stop_reason
            self._take_usage(event.usage.model_dump())
        elif event.type == "message_stop":
            self._stopped = True

    @staticmethod
    def _apply_delta(block: dict[str, Any] | None, delta: dict[str, Any]) -> None:
        if block is None:
            return
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
        elif kind == "input_json_delta":
            block["partial_json"] += delta["partial_json"]
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]

    def _take_usage(self, usage: dict[str, Any]) -> None:
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            if isinstance(usage.get(key), int):
                self._usage[key] = usage[key]

    def finish(self) -> AssistantTurn:
        """The complete turn. Raises `TransientModelError` if the stream was cut short or a
        tool call's arguments are not a JSON object although the model finished it."""
        if not self._stopped:
            raise TransientModelError(
                "anthropic stream ended before message_stop", provider=PROVIDER
            )
        stop = _STOP_REASONS.get(self._stop_reason or "", "end")
        return self._turn(stop, strict=stop != "max_tokens")

    def partial(self) -> AssistantTurn:
        """What has arrived so far, as a cancelled turn without tool calls."""
        return self._turn("cancelled", strict=False).model_copy(update={"tool_calls": ()})

    def _turn(self, stop: StopReason, *, strict: bool) -> AssistantTurn:
        text: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[ReasoningBlock] = []
        for _, block in sorted(self._blocks.items()):
            if block["type"] == "text":
                text.append(block.get("text", ""))
            elif block["type"] in _REASONING_TYPES:
                reasoning.append(
                    ReasoningBlock(provider=PROVIDER, model=self._requested, block=block)
                )
            elif block["type"] == "tool_use":
                arguments = parse_arguments(block["partial_json"])
                if arguments is None and strict:
                    raise TransientModelError(
                        f"anthropic returned unparseable arguments for tool {block['name']!r}",
                        provider=PROVIDER,
                    )
                if arguments is not None:
                    calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
        usage = Usage(
            input_tokens=self._usage.get("input_tokens", 0),
            output_tokens=self._usage.get("output_tokens", 0),
            cache_read_tokens=self._usage.get("cache_read_input_tokens", 0),
            cache_write_tokens=self._usage.get("cache_creation_input_tokens", 0),
        )
        return AssistantTurn(
            text="".join(text),
            tool_calls=tuple(calls),
            reasoning=tuple(reasoning),
            usage=usage,
            stop_reason=stop,
            model=self._model,
            cost_usd=cost_usd(self._model, usage),
        )


def classify_error(exc: Exception, secret: str | None) -> ModelError:
    """Translate an `anthropic` or `httpx2` exception into our hierarchy; never raises.

    429, 408, 409, 5xx, 529 and in-stream `overloaded_error` / `api_error` are transient; a
    400 whose message says the prompt is too long, and 413, are context overflows; other
    4xx are permanent; network failures and timeouts are transient. The message names the
    status, error type and request id, never the API key.
    """
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return TransientModelError("anthropic request timed out", provider=PROVIDER)
    if not isinstance(exc, anthropic.APIStatusError):
        text = redact_secret(f"anthropic call failed ({type(exc).__name__}): {exc}", secret)
        return TransientModelError(text, provider=PROVIDER)
    # An `event: error` inside a 200 stream arrives as a status error with status 200.
    status = exc.status_code if exc.status_code != 200 else None
    kind = exc.type or "error"
    detail = exc.api_message or exc.message
    request = f" (request {exc.request_id})" if exc.request_id else ""
    where = status if status is not None else "in-stream"
    text = redact_secret(f"anthropic {where} {kind}: {detail}{request}", secret)
    if status == 413 or (status == 400 and "prompt is too long" in detail.lower()):
        return ContextOverflowError(text, provider=PROVIDER, status_code=status)
    if status is None or status in (408, 409, 429) or status >= 500 or kind in _TRANSIENT_TYPES:
        retry_after = retry_after_seconds(exc.response.headers)
        return TransientModelError(
            text, provider=PROVIDER, status_code=status, retry_after=retry_after
        )
    return permanent_error(text, PROVIDER, status, kind, detail, API_KEY_VARIABLE)
