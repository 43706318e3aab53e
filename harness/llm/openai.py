"""OpenAI Chat Completions, or any server that speaks it: the only module that touches the
`openai` SDK.

Requests always stream with `include_usage`; the SDK never retries (`max_retries=0`).
System blocks are joined into one system message, stable text first, so that the
provider's automatic prefix caching can reuse it.

The stream is read as plain dicts: the SDK's streaming response (`with_streaming_response`)
parsed as `Stream[object]` still sends the request, raises HTTP errors, decodes the SSE, stops
at `[DONE]` and raises an in-stream error object as `APIError`, but builds no pydantic
`ChatCompletionChunk` per chunk, which cost most of a long answer's CPU (docs/benchmarks.md).

The SDK (about 25 MB a process) is imported when a call is made or an error classified, not
with this module or a provider: building a provider and rendering its requests (`prepare`,
all a worker does on the model gateway's path) load no SDK. The blocking client is built by
the first `complete` (`harness.lazy_value.Lazy`), the async one by the first async call.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2

from harness.lazy_value import Lazy
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
from harness.llm.openai_turn import PROVIDER, TurnBuilder
from harness.llm.openai_wire import (
    append_volatile,
    convert_messages,
    convert_tool_choice,
    convert_tools,
)
from harness.llm.provider import SystemPrompt, TextSink, system_blocks
from harness.llm.request_log import quiet_requests_to
from harness.llm.settings import DEFAULT_BASE_URLS, DEFAULT_MODELS
from harness.llm.streaming import StreamCancelled, events
from harness.llm.token_field import MaxTokensField, TokenField
from harness.llm.tool_choice import check_tool_choice
from harness.llm.types import (
    AssistantTurn,
    Message,
    ToolSpec,
)

if TYPE_CHECKING:
    import openai
    from openai.types.chat import (
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageParam,
        ChatCompletionToolChoiceOptionParam,
    )

API_KEY_VARIABLE = "OPENAI_API_KEY"
DEFAULT_BASE_URL = DEFAULT_BASE_URLS[PROVIDER]
DEFAULT_MODEL = DEFAULT_MODELS[PROVIDER]
_NO_KEY = "no-key-configured"  # local OpenAI-compatible servers ignore the key
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
        httpx2.URL(url)  # a malformed URL fails here, as when the SDK's client was built here
        quiet_requests_to(url)
        self._model = model
        self._max_tokens = max_tokens
        self._temperature = temperature  # None: the server's default (not sent)
        self._secret = api_key
        self._token_field = TokenField(url, max_tokens_field)
        self._client_args: dict[str, Any] = {
            "api_key": api_key or _NO_KEY, "base_url": url, "max_retries": 0, "timeout": timeout,
        }  # fmt: skip
        self._client: Lazy[openai.OpenAI] = Lazy(self._sync_client)  # built by `complete`
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
        import openai

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
        import openai

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
        import openai

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
    ) -> TurnBuilder:
        """Read one streamed completion; lets `openai.BadRequestError` through for the
        caller's field fallback and classifies every other failure."""
        import openai

        def open_stream() -> openai.Stream[object]:
            manager = self._client.get().chat.completions.with_streaming_response.create(
                **self._create_args(wire, field, limit)
            )
            # Closing the stream closes this response, which is all leaving `manager` does.
            stream: openai.Stream[object] = manager.__enter__().parse(to=openai.Stream[object])
            return stream  # chunks as dicts

        builder = TurnBuilder(self._model, on_text)
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
    ) -> TurnBuilder:
        """`_stream` on the async client."""
        import openai

        if self._aclient is None:
            self._aclient = openai.AsyncOpenAI(**self._client_args)
        builder = TurnBuilder(self._model, on_text)
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

    def _sync_client(self) -> openai.OpenAI:
        import openai

        return openai.OpenAI(**self._client_args)

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
        """Release the blocking client's HTTP connections, if it was built. Idempotent."""
        client = self._client.take()
        if client is not None:
            client.close()

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


def classify_error(exc: Exception, secret: str | None) -> ModelError:
    """Translate an `openai` or `httpx2` exception into our hierarchy; never raises.

    `context_length_exceeded` (or a 400 saying the context is exceeded) is an overflow;
    408, 409, 429 (except `insufficient_quota`), 5xx, errors inside the stream, network
    failures and timeouts are transient; other 4xx are permanent. The message never contains
    the API key.
    """
    import openai  # for its exception types; the call that failed has loaded it

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
