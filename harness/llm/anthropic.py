"""The Anthropic Messages API: the only module that touches the `anthropic` SDK.

Requests always stream; the SDK never retries (`max_retries=0`), the caller's durable step
does. The stable part of the system prompt ends with a `cache_control` breakpoint so that
tools plus stable system text form a byte-identical, cacheable prefix from turn to turn; the
conversation carries two more (see `mark_conversation`), three of the four allowed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Literal, cast

import anthropic
import httpx2
from anthropic.types import (
    ContentBlockParam,
    MessageParam,
    RawMessageStreamEvent,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
)

from harness.llm.errors import (
    ContextOverflowError,
    ModelCancelledError,
    ModelError,
    PermanentModelError,
    TransientModelError,
    redact_secret,
    retry_after_seconds,
)
from harness.llm.guard import check_base_url
from harness.llm.pricing import cost_usd
from harness.llm.provider import SystemPrompt, system_blocks
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
    ) -> AssistantTurn:
        """See `ModelProvider.complete`."""
        blocks = system_blocks(system)
        wire_system = convert_system([b for b in blocks if not b.volatile])
        wire_messages = mark_conversation(convert_messages(messages, self._model))
        append_volatile(wire_messages, [b for b in blocks if b.volatile])
        wire_tools = convert_tools(tools)

        def open_stream() -> anthropic.Stream[RawMessageStreamEvent]:
            return self._client.messages.create(
                model=self._model,
                max_tokens=max_tokens or self._max_tokens,
                system=wire_system or anthropic.omit,
                messages=wire_messages,
                tools=wire_tools or anthropic.omit,
                stream=True,
            )

        builder = _TurnBuilder(self._model)
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


def convert_messages(messages: Sequence[Message], model: str) -> list[MessageParam]:
    """Neutral messages on the wire. Tool results become `tool_result` blocks in a user
    message; consecutive messages that land on the same wire role are merged, with tool
    results first, as the API requires; an empty tool result is sent as `(no output)`.
    Reasoning blocks are kept only when they came from `model`."""
    turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []
    for message in messages:
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        content = _content(message, model)
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(content)
            turns[-1][1].sort(key=lambda block: block["type"] != "tool_result")
        else:
            turns.append((role, content))
    wire: list[MessageParam] = []
    for role, blocks in turns:
        if role == "user":
            wire.append({"role": "user", "content": blocks})
        else:
            wire.append({"role": "assistant", "content": blocks})
    return wire


def mark_conversation(wire: list[MessageParam]) -> list[MessageParam]:
    """Put cache breakpoints on the last block of the last user message (written to the
    cache by this call) and of the user message before the previous assistant reply (the
    point the previous call wrote), so each call reads the whole earlier conversation from
    the cache, however many blocks the last turn added. Mutates and returns `wire`."""
    for position in (-3, -1):
        if len(wire) < -position or wire[position]["role"] != "user":
            continue
        content = wire[position]["content"]
        if isinstance(content, list) and content:
            block = cast(dict[str, Any], content[-1])
            block["cache_control"] = {"type": "ephemeral"}
    return wire


def append_volatile(wire: list[MessageParam], blocks: Sequence[SystemBlock]) -> None:
    """Send the volatile system text (the time, budget notes) as a last text block of the
    last user message, after every cache breakpoint: in `system` it would sit before the
    conversation and change the cached prefix on every call. Mutates `wire`."""
    if not blocks or not wire or wire[-1]["role"] != "user":
        return
    content = wire[-1]["content"]
    if isinstance(content, list):
        text = "\n\n".join(b.text for b in blocks)
        content.append({"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"})


def _content(message: Message, model: str) -> list[ContentBlockParam]:
    blocks: list[ContentBlockParam] = []
    for reasoning in message.reasoning:
        if reasoning.provider == PROVIDER and reasoning.model == model:
            blocks.append(reasoning.block)  # type: ignore[arg-type]  # echoed as received
    for result in message.tool_results:
        param: ToolResultBlockParam = {
            "type": "tool_result",
            "tool_use_id": result.tool_call_id,
            "content": result.content or "(no output)",
        }
        if result.is_error:
            param["is_error"] = True
        blocks.append(param)
    if message.text.strip():
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    return blocks


class _TurnBuilder:
    """Assembles an `AssistantTurn` from raw stream events."""

    def __init__(self, model: str) -> None:
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
            self._apply_delta(self._blocks.get(event.index), event.delta.model_dump())
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
    return PermanentModelError(text, provider=PROVIDER, status_code=status)
