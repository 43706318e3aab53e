"""The provider-neutral conversation: what the agent loop sends to a model and what comes back.

Every type here is a frozen pydantic model, because turns are written to the durable step
journal and to session JSONL: `model_dump(mode="json")` and `model_validate` round-trip them.
Each provider converts these to its own wire format only at the call.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["user", "assistant", "tool"]
StopReason = Literal["end", "tool_use", "max_tokens", "cancelled"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SystemBlock(_Frozen):
    """One piece of the system prompt.

    Stable blocks (the default) must come before volatile ones. Providers that support prompt
    caching mark the end of the stable prefix as cacheable, so keep anything that changes per
    turn (the current time, say) in a final `volatile=True` block.
    """

    text: str = Field(min_length=1)
    volatile: bool = False


class ToolCall(_Frozen):
    """A tool invocation the model asked for. `id` is the provider's id, echoed in the result."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Frozen):
    """The outcome of one tool call, answering the `ToolCall` with the same id."""

    tool_call_id: str = Field(min_length=1)
    content: str
    is_error: bool = False


class ToolSpec(_Frozen):
    """A tool the model may call. `parameters` is a JSON Schema object for the arguments."""

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ReasoningBlock(_Frozen):
    """An opaque piece of the model's reasoning that must be sent back unchanged.

    Anthropic models with thinking on return signed `thinking` / `redacted_thinking` blocks;
    during a tool-use cycle the API requires them back, byte for byte, at the start of the
    assistant message. `block` is the wire block as received. Providers send a block back only
    to the same `provider` and `model` that produced it and drop it otherwise.
    """

    provider: str
    model: str
    block: dict[str, Any]


class ImageRef(_Frozen):
    """An image a person sent, in a user message. The session keeps `path` (relative to the
    workspace) and `media_type` only; `data` (base64) is filled just before a model call and
    never stored. Providers send an image only when `data` is set."""

    path: str = Field(min_length=1)
    media_type: str = "image/jpeg"
    data: str = ""


class Usage(_Frozen):
    """Tokens one call used.

    `input_tokens` counts only uncached input; cached input is in `cache_read_tokens`
    (read from the cache) and `cache_write_tokens` (written to it). The total prompt size is
    the sum of the three.
    """

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)


class Message(_Frozen):
    """One message of the conversation.

    - `user`: `text` is required; no tool calls or results; optionally `images`.
    - `assistant`: `text`, `tool_calls` or both, plus any `reasoning` to send back.
    - `tool`: one or more `tool_results` answering the previous assistant message; no text.

    Construction raises `pydantic.ValidationError` when a message breaks these rules.
    """

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    reasoning: tuple[ReasoningBlock, ...] = ()
    images: tuple[ImageRef, ...] = ()

    @model_validator(mode="after")
    def _check_shape(self) -> Self:
        if self.role == "user" and (not self.text.strip() or self.tool_calls or self.tool_results):
            raise ValueError("a user message needs non-blank text and no tool calls or results")
        if self.role == "assistant" and (
            self.tool_results or (not self.text.strip() and not self.tool_calls)
        ):
            raise ValueError("an assistant message needs text or tool calls, and no tool results")
        if self.role == "tool" and (self.text or self.tool_calls or not self.tool_results):
            raise ValueError("a tool message holds tool results only")
        if self.role != "assistant" and self.reasoning:
            raise ValueError("only assistant messages carry reasoning")
        if self.role != "user" and self.images:
            raise ValueError("only user messages carry images")
        return self

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message with `text`."""
        return cls(role="user", text=text)

    @classmethod
    def assistant(
        cls,
        text: str = "",
        tool_calls: tuple[ToolCall, ...] = (),
        reasoning: tuple[ReasoningBlock, ...] = (),
    ) -> Message:
        """An assistant message, as a model produced it."""
        return cls(role="assistant", text=text, tool_calls=tool_calls, reasoning=reasoning)

    @classmethod
    def tool(cls, *results: ToolResult) -> Message:
        """A message carrying the results of the previous assistant message's tool calls."""
        return cls(role="tool", tool_results=results)


class AssistantTurn(_Frozen):
    """What one `ModelProvider.complete` call produced.

    `stop_reason` is `tool_use` when `tool_calls` is non-empty and the caller should run
    them, `end` when the model finished, `max_tokens` when it was cut off, and `cancelled`
    only on the partial turn carried by `ModelCancelledError`. `cost_usd` is 0.0 for models
    missing from the price table.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: tuple[ReasoningBlock, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason
    model: str
    cost_usd: float = Field(default=0.0, ge=0.0)

    def to_message(self) -> Message | None:
        """This turn as an assistant message for the history, reasoning included; None if it
        has neither text nor tool calls."""
        if not self.text.strip() and not self.tool_calls:
            return None
        return Message.assistant(self.text, self.tool_calls, self.reasoning)
