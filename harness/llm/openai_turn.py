"""Chat Completions' streamed chunks, as decoded JSON, assembled into an `AssistantTurn`
(`TurnBuilder`): the text passed on as it comes, tool calls gathered from their fragments
whatever the server's chunking, usage and cached tokens as OpenAI or llama.cpp report them.
Pure: no network, no SDK (`harness.llm.openai` reads the stream)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.llm.errors import TransientModelError
from harness.llm.pricing import cost_usd
from harness.llm.provider import TextSink
from harness.llm.streaming import parse_arguments, take_event
from harness.llm.types import AssistantTurn, StopReason, ToolCall, Usage

PROVIDER = "openai"
_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end",
    "content_filter": "end",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


def _cache_n(chunk: Mapping[str, Any]) -> int:
    """Prompt tokens read from the cache as llama.cpp's server reports them when its usage
    has no `prompt_tokens_details`: `timings.cache_n` on the same (last) chunk; else 0."""
    timings = chunk.get("timings")
    cache_n = timings.get("cache_n") if isinstance(timings, dict) else None
    return cache_n if isinstance(cache_n, int) and cache_n > 0 else 0


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class TurnBuilder:
    """Assembles an `AssistantTurn` from chunks. Only a tool call's first chunk carries its
    id and name; its arguments arrive in pieces; the usage chunk has no choices."""

    model: str
    on_text: TextSink | None = None
    text: list[str] = field(default_factory=list)
    calls: list[_PendingCall] = field(default_factory=list)
    by_index: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)

    def feed(self, chunk: object) -> None:
        """Take one chunk, as decoded JSON. Raises `ValueError` for a chunk not of a chunk's
        shape; fields it does not know are ignored."""
        take_event(self._take, chunk, self.on_text)

    def _take(self, chunk: Any) -> str | None:
        """Apply `chunk`; returns the text it adds, if any."""
        self.model = chunk.get("model") or self.model
        usage = chunk.get("usage")
        if usage is not None:
            details = usage.get("prompt_tokens_details")
            cached = (details.get("cached_tokens") or 0) if details is not None else _cache_n(chunk)
            self.usage = Usage(
                input_tokens=max((usage.get("prompt_tokens") or 0) - cached, 0),
                output_tokens=usage.get("completion_tokens") or 0,
                cache_read_tokens=cached,
            )
        text: str | None = None
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                text = str(content)
                self.text.append(text)
            for piece in delta.get("tool_calls") or ():
                piece_id = piece.get("id") or ""
                call = self._call_for(piece.get("index"), piece_id)
                call.id = call.id or piece_id
                function = piece.get("function")
                if function is not None:
                    call.name = call.name or (function.get("name") or "")
                    call.arguments += function.get("arguments") or ""
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        return text

    def _call_for(self, index: int | None, call_id: str) -> _PendingCall:
        """The call a fragment belongs to, whatever the server's chunking: a known id wins,
        a new id starts a call (llama.cpp sends parallel calls all at index 0), an id-less
        fragment goes to its index, or without one (some servers omit it) to the last call."""
        known = next((c for c in self.calls if call_id and c.id == call_id), None)
        if known is not None:
            return known
        at_index = self.by_index.get(index) if index is not None else None
        if at_index is not None and not (call_id and at_index.id):
            return at_index
        if not call_id and index is None and self.calls:
            return self.calls[-1]
        call = _PendingCall()
        self.calls.append(call)
        if index is not None:
            self.by_index[index] = call
        return call

    def finish(self) -> AssistantTurn:
        """The complete turn. Raises `TransientModelError` if no finish reason arrived or a
        finished tool call has arguments that are not a JSON object."""
        if self.finish_reason is None:
            raise TransientModelError(
                "openai stream ended without a finish reason", provider=PROVIDER
            )
        stop = _FINISH_REASONS.get(self.finish_reason, "end")
        turn = self._turn(stop, strict=stop != "max_tokens")
        if turn.tool_calls and stop == "end":
            return turn.model_copy(update={"stop_reason": "tool_use"})
        return turn

    def partial(self) -> AssistantTurn:
        """What has arrived so far, as a cancelled turn without tool calls."""
        return self._turn("cancelled", strict=False).model_copy(update={"tool_calls": ()})

    def _turn(self, stop: StopReason, *, strict: bool) -> AssistantTurn:
        calls: list[ToolCall] = []
        for pending in self.calls:
            arguments = parse_arguments(pending.arguments)
            if arguments is None and strict:
                raise TransientModelError(
                    f"openai returned unparseable arguments for tool {pending.name!r}",
                    provider=PROVIDER,
                )
            if arguments is not None and pending.name:
                call_id = pending.id or f"call_{uuid.uuid4().hex[:24]}"
                calls.append(ToolCall(id=call_id, name=pending.name, arguments=arguments))
        return AssistantTurn(
            text="".join(self.text),
            tool_calls=tuple(calls),
            usage=self.usage,
            stop_reason=stop,
            model=self.model,
            cost_usd=cost_usd(self.model, self.usage),
        )
