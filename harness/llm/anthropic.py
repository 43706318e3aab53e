"""The Anthropic Messages API: the only module that touches the `anthropic` SDK.

Requests always stream; the SDK never retries (`max_retries=0`), the caller's durable step
does. The request body, with its cache breakpoints, is rendered by
`harness.llm.anthropic_wire`; this module sends it, assembles the streamed reply into an
`AssistantTurn` and translates the SDK's errors into ours (`classify_error`).

The stream is read as plain dicts (`Stream[object]`): the SDK still sends the request, decodes
the SSE, skips pings and raises an in-stream `error` event as `APIStatusError`, but builds no
pydantic model per event, which cost most of a long answer's CPU (see docs/benchmarks.md).

The SDK (about 45 MB a process) is imported when a call is made or an error classified, not
with this module or a provider: building a provider and rendering its requests (`prepare`,
all a worker does on the model gateway's path) load no SDK. The blocking client is built by
the first `complete` (`harness.lazy_value.Lazy`), the async one by the first async call.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx2

from harness.lazy_value import Lazy
from harness.llm.anthropic_wire import PROVIDER, request_body
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
from harness.llm.pricing import cost_usd
from harness.llm.provider import SystemPrompt, TextSink, system_blocks
from harness.llm.request_log import quiet_requests_to
from harness.llm.settings import DEFAULT_BASE_URLS, DEFAULT_MODELS
from harness.llm.streaming import StreamCancelled, events, parse_arguments, take_event
from harness.llm.tool_choice import check_tool_choice
from harness.llm.types import (
    AssistantTurn,
    Message,
    ReasoningBlock,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)

if TYPE_CHECKING:
    import anthropic

API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
DEFAULT_BASE_URL = DEFAULT_BASE_URLS[PROVIDER]
DEFAULT_MODEL = DEFAULT_MODELS[PROVIDER]
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
        temperature: float | None = None,
    ) -> None:
        url = base_url or DEFAULT_BASE_URL
        check_base_url(url)
        httpx2.URL(url)  # a malformed URL fails here, as when the SDK's client was built here
        quiet_requests_to(url)
        self._model = model
        self._max_tokens = max_tokens
        self._temperature = temperature  # None: the API's default (not sent)
        self._secret = api_key
        self._client_args: dict[str, Any] = {
            "api_key": api_key or _NO_KEY, "base_url": url, "max_retries": 0, "timeout": timeout,
        }  # fmt: skip
        self._client: Lazy[anthropic.Anthropic] = Lazy(self._sync_client)  # built by `complete`
        self._aclient: anthropic.AsyncAnthropic | None = None  # made by the first async call

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
        tool_choice: str | None = None,
    ) -> AssistantTurn:
        """See `ModelProvider.complete`."""
        import anthropic

        body = self._body(system, messages, tools, max_tokens, tool_choice)

        def open_stream() -> anthropic.Stream[object]:
            # The body is rendered here, not by `messages.create`: the SDK would copy and encode
            # the whole history again on every call.
            return self._client.get().post(
                "/v1/messages",
                cast_to=anthropic.types.Message,
                content=body,
                stream=True,
                stream_cls=anthropic.Stream[object],  # events as dicts
            )

        builder = _TurnBuilder(self._model, on_text)
        try:
            for event in events(open_stream, cancel):
                builder.feed(event)
        except StreamCancelled:
            raise ModelCancelledError(builder.partial(), provider=PROVIDER) from None
        except (anthropic.APIError, httpx2.HTTPError, ValueError) as exc:
            raise self._failure(exc) from exc
        return builder.finish()

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
        body = self._body(system, messages, tools, max_tokens, tool_choice)
        return await self._send_async(body, on_text)

    def prepare(
        self,
        *,
        system: SystemPrompt,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        tool_choice: str | None = None,
    ) -> str:
        """See `PreparedModelProvider.prepare`: the Messages API body (the key goes in a
        header)."""
        return self._body(system, messages, tools, max_tokens, tool_choice).decode()

    async def send_async(self, prepared: str, *, on_text: TextSink | None = None) -> AssistantTurn:
        """See `PreparedModelProvider.send_async`."""
        return await self._send_async(prepared.encode(), on_text)

    async def _send_async(self, body: bytes, on_text: TextSink | None) -> AssistantTurn:
        import anthropic

        if self._aclient is None:
            self._aclient = anthropic.AsyncAnthropic(**self._client_args)
        builder = _TurnBuilder(self._model, on_text)
        try:
            stream = await self._aclient.post(
                "/v1/messages",
                cast_to=anthropic.types.Message,
                content=body,
                stream=True,
                stream_cls=anthropic.AsyncStream[object],  # events as dicts
            )
            try:
                async for event in stream:
                    builder.feed(event)
            finally:
                await stream.close()
        except (anthropic.APIError, httpx2.HTTPError, ValueError) as exc:
            raise self._failure(exc) from exc
        return builder.finish()

    def _sync_client(self) -> anthropic.Anthropic:
        import anthropic

        return anthropic.Anthropic(**self._client_args)

    def _failure(self, exc: Exception) -> ModelError:
        if isinstance(exc, ValueError):  # an event that is not JSON or not of its type's shape
            return TransientModelError(
                f"anthropic sent a malformed stream: {exc}", provider=PROVIDER
            )
        return classify_error(exc, self._secret)

    def _body(
        self,
        system: SystemPrompt,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int | None,
        tool_choice: str | None,
    ) -> bytes:
        return request_body(
            model=self._model,
            max_tokens=max_tokens or self._max_tokens,
            temperature=self._temperature,
            system=system_blocks(system),
            messages=messages,
            tools=tools,
            tool_choice=check_tool_choice(tool_choice, tools),
        )

    @property
    def max_tokens(self) -> int:
        """The output-token limit a call sends when it names none."""
        return self._max_tokens

    @property
    def temperature(self) -> float | None:
        """The sampling temperature every call sends (None: the API's default)."""
        return self._temperature

    def close(self) -> None:
        """Release the blocking client's HTTP connections, if it was built. Idempotent."""
        client = self._client.take()
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Release the async client's connections, on the loop that used them. Idempotent."""
        client, self._aclient = self._aclient, None
        if client is not None:
            await client.close()


class _TurnBuilder:
    """Assembles an `AssistantTurn` from raw stream events, as decoded JSON."""

    def __init__(self, model: str, on_text: TextSink | None = None) -> None:
        self._on_text = on_text
        self._requested = model  # reasoning is echoed only to the model that was asked
        self._model = model
        self._blocks: dict[int, dict[str, Any]] = {}
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._stopped = False

    def feed(self, event: object) -> None:
        """Take one event. Raises `ValueError` for an event not of its type's shape; event
        types it does not know (`ping`, `content_block_stop`, future ones) are ignored."""
        take_event(self._take, event, self._on_text)

    def _take(self, event: Any) -> str | None:
        """Apply `event`; returns the text it adds, if any."""
        kind = event["type"]
        if kind == "message_start":
            message = event["message"]
            self._model = message.get("model") or self._model
            self._take_usage(message.get("usage") or {})
        elif kind == "content_block_start":
            # None fields dropped, as the SDK's models dumped them: reasoning is echoed as kept
            block = {k: v for k, v in event["content_block"].items() if v is not None}
            if block["type"] == "tool_use":
                block["partial_json"] = ""
            self._blocks[event["index"]] = block
        elif kind == "content_block_delta":
            delta = event["delta"]
            self._apply_delta(self._blocks.get(event["index"]), delta)
            if delta.get("type") == "text_delta":
                return str(delta["text"])
        elif kind == "message_delta":
            self._stop_reason = event["delta"].get("stop_reason") or self._stop_reason
            self._take_usage(event.get("usage") or {})
        elif kind == "message_stop":
            self._stopped = True
        return None

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

    def _take_usage(self, usage: Mapping[str, Any]) -> None:
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
    import anthropic  # for its exception types; the call that failed has loaded it

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
