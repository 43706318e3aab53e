"""OpenAI Chat Completions, or any server that speaks it: the only module that touches the
`openai` SDK.

Requests always stream with `include_usage`; the SDK never retries (`max_retries=0`).
System blocks are joined into one system message, stable text first, so that the
provider's automatic prefix caching can reuse it.

The stream is read as plain dicts: the SDK's streaming response (`with_streaming_response`)
parsed as `Stream[object]` still sends the request, raises HTTP errors, decodes the SSE, stops
at `[DONE]` and raises an in-stream error object as `APIError`, but builds no pydantic
`ChatCompletionChunk` per chunk, which cost most of a long answer's CPU (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
)

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
from harness.llm.openai_wire import (
    append_volatile,
    convert_messages,
    convert_tool_choice,
    convert_tools,
)
from harness.llm.pricing import cost_usd
from harness.llm.provider import SystemPrompt, TextSink, system_blocks
from harness.llm.request_log import quiet_requests_to
from harness.llm.settings import DEFAULT_BASE_URLS, DEFAULT_MODELS
from harness.llm.streaming import StreamCancelled, events, parse_arguments, take_event
from harness.llm.token_field import MaxTokensField, TokenField
from harness.llm.tool_choice import check_tool_choice
from harness.llm.types import (
    AssistantTurn,
    Message,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)

PROVIDER = "openai"
API_KEY_VARIABLE = "OPENAI_API_KEY"
DEFAULT_BASE_URL = DEFAULT_BASE_URLS[PROVIDER]
DEFAULT_MODEL = DEFAULT_MODELS[PROVIDER]
_NO_KEY = "no-key-configured"  # local OpenAI-compatible servers ignore the key
_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end",
    "content_filter": "end",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}
_OVERFLOW_HINTS = ("context_length_exceeded", "maximum context length", "context window")


class OpenAIProvider:
    """A `ModelProvider` for Chat Completions on OpenAI or an OpenAI-compatible server.

    Raises `PermanentModelError` at construction when real model calls are forbidden
    (see `harness.llm.guard`) and `base_url` is not on loopback. Thread-safe.
    """

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        max_tokens: int = 8192,
        timeout: float = 600.0,
        max_tokens_field: MaxTokensField | None = None,
        temperature: float | None = None,
    ) -> None:
        url = base_url or DEFAULT_BASE_URL
        check_base_url(url)
        quiet_requests_to(url)
        self._model = model
        self._max_tokens = max_tokens
        self._temperature = temperature  # None: the server's default (not sent)
        self._secret = api_key
        self._token_field = TokenField(url, max_tokens_field)
        self._client_args: dict[str, Any] = {
            "api_key": api_key or _NO_KEY, "base_url": url, "max_retries": 0, "timeout": timeout,
        }  # fmt: skip
        self._client = openai.OpenAI(**self._client_args)
        self._aclient: openai.AsyncOpenAI | None = None  # made by the first async call

    @property
    def name(self) -> str:
        """Always `openai`."""
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
        tool_choice: str | None = None,
    ) -> AssistantTurn:
        """See `ModelProvider.complete`."""
        wire = self._wire(system, messages, tools, tool_choice)
        limit = max_tokens or self._max_tokens
        sent = self._token_field.current()
        try:
            return self._stream(wire, sent, limit, cancel, on_text).finish()
        except openai.BadRequestError as exc:
            self._fall_back(sent, exc)
        try:
            return self._stream(wire, self._token_field.current(), limit, cancel, on_text).finish()
        except openai.BadRequestError as exc:
            raise classify_error(exc, self._secret) from exc

    async def complete_async(
        self,
        *,
        system: SystemPrompt,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
        tool_choice: str | None = None,
    ) -> AssistantTurn:
        """`complete` on the SDK's async client, for an event loop (`AsyncModelProvider`);
        cancelling the awaiting task abandons the stream."""
        wire = self._wire(system, messages, tools, tool_choice)
        return await self._send_async(wire, max_tokens or self._max_tokens, on_text)

    def prepare(
        self,
        *,
        system: SystemPrompt,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        tool_choice: str | None = None,
    ) -> str:
        """See `PreparedModelProvider.prepare`: the wire messages, tools, tool choice and
        output-token limit as JSON (the key goes in a header; the limit's field is chosen
        when sent, as the server takes it)."""
        wire = self._wire(system, messages, tools, tool_choice)
        limit = max_tokens or self._max_tokens
        prepared = {"messages": wire.messages, "tools": wire.tools, "choice": wire.choice}
        return json.dumps(prepared | {"limit": limit})

    async def send_async(self, prepared: str, *, on_text: TextSink | None = None) -> AssistantTurn:
        """See `PreparedModelProvider.send_async`."""
        found = json.loads(prepared)
        wire = _Wire(found["messages"], found["tools"], found["choice"])
        return await self._send_async(wire, int(found["limit"]), on_text)

    async def _send_async(self, wire: _Wire, limit: int, on_text: TextSink | None) -> AssistantTurn:
        sent = self._token_field.current()
        try:
            return (await self._stream_async(wire, sent, limit, on_text)).finish()
        except openai.BadRequestError as exc:
            self._fall_back(sent, exc)
        try:
            retry = self._token_field.current()
            return (await self._stream_async(wire, retry, limit, on_text)).finish()
        except openai.BadRequestError as exc:
            raise classify_error(exc, self._secret) from exc

    def _wire(
        self,
        system: SystemPrompt,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: str | None,
    ) -> _Wire:
        choice = check_tool_choice(tool_choice, tools)
        blocks = system_blocks(system)
        wire_messages = convert_messages([b for b in blocks if not b.volatile], messages)
        append_volatile(wire_messages, [b for b in blocks if b.volatile])
        wire_choice = convert_tool_choice(choice) if choice is not None else None
        return _Wire(wire_messages, convert_tools(tools), wire_choice)

    def _fall_back(self, sent: MaxTokensField, exc: openai.BadRequestError) -> None:
        """A server that does not know the token-limit field we sent: the caller tries the
        other once; any other bad request is raised, classified."""
        detail = f"{exc.message} {exc.body}"
        if not self._token_field.fall_back(sent, detail, getattr(exc, "param", None)):
            raise classify_error(exc, self._secret) from exc

    def _create_args(self, wire: _Wire, field: MaxTokensField, limit: int) -> dict[str, Any]:
        return {
            "model": self._model,
            "messages": wire.messages,
            "tools": wire.tools or openai.omit,
            "tool_choice": openai.omit if wire.choice is None else wire.choice,
            "max_completion_tokens": limit if field == "max_completion_tokens" else openai.omit,
            "max_tokens": limit if field == "max_tokens" else openai.omit,
            "temperature": openai.omit if self._temperature is None else self._temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    def _stream(
        self,
        wire: _Wire,
        field: MaxTokensField,
        limit: int,
        cancel: threading.Event | None,
        on_text: TextSink | None = None,
    ) -> _TurnBuilder:
        """Read one streamed completion; lets `openai.BadRequestError` through for the
        caller's field fallback and classifies every other failure."""

        def open_stream() -> openai.Stream[object]:
            manager = self._client.chat.completions.with_streaming_response.create(
                **self._create_args(wire, field, limit)
            )
            # Closing the stream closes this response, which is all leaving `manager` does.
            stream: openai.Stream[object] = manager.__enter__().parse(to=openai.Stream[object])
            return stream  # chunks as dicts

        builder = _TurnBuilder(self._model, on_text)
        try:
            for chunk in events(open_stream, cancel):
                builder.feed(chunk)
        except StreamCancelled:
            raise ModelCancelledError(builder.partial(), provider=PROVIDER) from None
        except openai.BadRequestError:
            raise
        except (openai.APIError, httpx2.HTTPError, ValueError) as exc:
            raise self._failure(exc) from exc
        return builder

    async def _stream_async(
        self, wire: _Wire, field: MaxTokensField, limit: int, on_text: TextSink | None
    ) -> _TurnBuilder:
        """`_stream` on the async client."""
        if self._aclient is None:
            self._aclient = openai.AsyncOpenAI(**self._client_args)
        builder = _TurnBuilder(self._model, on_text)
        try:
            args = self._create_args(wire, field, limit)
            streaming = self._aclient.chat.completions.with_streaming_response
            async with streaming.create(**args) as response:
                stream = await response.parse(to=openai.AsyncStream[object])  # chunks as dicts
                try:
                    async for chunk in stream:
                        builder.feed(chunk)
                finally:
                    await stream.close()
        except openai.BadRequestError:
            raise
        except (openai.APIError, httpx2.HTTPError, ValueError) as exc:
            raise self._failure(exc) from exc
        return builder

    def _failure(self, exc: Exception) -> ModelError:
        if isinstance(exc, ValueError):  # a chunk that is not JSON or not of a chunk's shape
            return TransientModelError(f"openai sent a malformed stream: {exc}", provider=PROVIDER)
        return classify_error(exc, self._secret)

    @property
    def max_tokens(self) -> int:
        """The output-token limit a call sends when it names none."""
        return self._max_tokens

    @property
    def temperature(self) -> float | None:
        """The sampling temperature every call sends (None: the server's default)."""
        return self._temperature

    def close(self) -> None:
        """Release the HTTP connections. Idempotent."""
        self._client.close()

    async def aclose(self) -> None:
        """Release the async client's connections, on the loop that used them. Idempotent."""
        client, self._aclient = self._aclient, None
        if client is not None:
            await client.close()


@dataclass(frozen=True)
class _Wire:
    """One request's messages, tools and tool choice on the wire."""

    messages: list[ChatCompletionMessageParam]
    tools: list[ChatCompletionFunctionToolParam]
    choice: ChatCompletionToolChoiceOptionParam | None


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
class _TurnBuilder:
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


def classify_error(exc: Exception, secret: str | None) -> ModelError:
    """Translate an `openai` or `httpx2` exception into our hierarchy; never raises.

    `context_length_exceeded` (or a 400 saying the context is exceeded) is an overflow;
    408, 409, 429 (except `insufficient_quota`), 5xx, errors inside the stream, network
    failures and timeouts are transient; other 4xx are permanent. The message never contains
    the API key.
    """
    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
        return TransientModelError("openai request timed out", provider=PROVIDER)
    if isinstance(exc, openai.APIConnectionError) or not isinstance(exc, openai.APIError):
        text = redact_secret(f"openai call failed ({type(exc).__name__}): {exc}", secret)
        return TransientModelError(text, provider=PROVIDER)
    # A bare APIError is an error object inside a 200 stream: there is no status.
    status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
    body = exc.body if isinstance(exc.body, dict) else {}
    detail = str(body.get("message") or exc.message)
    code = exc.code or ""
    where = status if status is not None else "in-stream"
    kind = code or exc.type or "error"
    text = redact_secret(f"openai {where} {kind}: {detail}", secret)
    overflow_hint = any(hint in detail.lower() for hint in _OVERFLOW_HINTS)
    if code == "context_length_exceeded" or (status in (None, 400) and overflow_hint):
        return ContextOverflowError(text, provider=PROVIDER, status_code=status)
    if status == 429 and code == "insufficient_quota":
        return permanent_error(text, PROVIDER, status, kind, detail, API_KEY_VARIABLE)
    if status is None or status in (408, 409, 429) or status >= 500:
        headers = exc.response.headers if isinstance(exc, openai.APIStatusError) else {}
        retry_after = retry_after_seconds(headers)
        return TransientModelError(
            text, provider=PROVIDER, status_code=status, retry_after=retry_after
        )
    return permanent_error(text, PROVIDER, status, kind, detail, API_KEY_VARIABLE)
