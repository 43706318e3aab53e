"""The seam between the agent loop and a model: one `complete` call per think step."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol, TypeGuard, runtime_checkable

from harness.llm.types import AssistantTurn, Message, SystemBlock, ToolSpec
from harness.protocol_checks import conforms

SystemPrompt = Sequence[SystemBlock] | str
TextSink = Callable[[str], None]
"""Receives each piece of answer text as it streams in, in order. Must not raise or block."""


@runtime_checkable
class ModelProvider(Protocol):
    """A model behind some wire API.

    Implementations stream under the hood, never retry (the caller's durable step does), and
    raise only `harness.llm.errors.ModelError` subclasses for failures of the call.
    """

    @property
    def name(self) -> str:
        """The wire API, e.g. `anthropic` or `openai`."""
        ...

    @property
    def model(self) -> str:
        """The model every call asks for."""
        ...

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
        """Ask the model for its next turn.

        `tool_choice` (`harness.llm.tool_choice`): None sends nothing (the provider's default,
        auto), else `"auto"`, `"any"` (or `"required"`: some tool must be called), `"none"`,
        or the name of one of `tools` (that tool must be called). Raises `ValueError` before
        any request for a name not among `tools` or a forced call with no tools.

        `on_text`, when given, is called with each piece of the answer's text (not reasoning,
        not tool arguments) as it arrives; the pieces joined are the turn's text.

        `system` is a plain string or stable blocks followed by volatile ones; `max_tokens`
        None means the provider's configured default. When `cancel` is set before or during
        the call, the request is abandoned and `ModelCancelledError` is raised with the partial
        turn. Raises `TransientModelError`, `ContextOverflowError` or `PermanentModelError` on
        failure; `ValueError` if `system` has a stable block after a volatile one.
        """
        ...

    def close(self) -> None:
        """Release the HTTP connections. Idempotent."""
        ...


@runtime_checkable
class AsyncModelProvider(Protocol):
    """A `ModelProvider` that can also be called from an event loop (the model gateway,
    `harness.agent.gateway`): the same call on the SDK's async client."""

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
        """`ModelProvider.complete` without blocking the loop. Cancelling the task that
        awaits it abandons the request (there is no cancel event); raises the same errors."""
        ...

    async def aclose(self) -> None:
        """Release the async client's connections, on the loop that used them. Idempotent."""
        ...


@runtime_checkable
class PreparedModelProvider(Protocol):
    """An `AsyncModelProvider` whose request can be rendered where the call is asked for
    and sent as is elsewhere (the model gateway makes a call a worker prepared):
    `send_async(prepare(...))` is `complete_async(...)` with the same arguments."""

    def prepare(
        self,
        *,
        system: SystemPrompt,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        tool_choice: str | None = None,
    ) -> str:
        """The call's request as this provider's wire API takes it (text, for
        `send_async`): never a credential, which the client adds when it sends. Raises
        `ValueError` as `complete` does, before anything is sent."""
        ...

    async def send_async(self, prepared: str, *, on_text: TextSink | None = None) -> AssistantTurn:
        """Send a request `prepare` rendered (by a provider of the same wire API, model and
        temperature, in any process) as it is; otherwise `complete_async`."""
        ...


def prepared(provider: object) -> TypeGuard[PreparedModelProvider]:
    """Whether `provider` is a `PreparedModelProvider` (`harness.protocol_checks.conforms`:
    decided once per class)."""
    return conforms(provider, PreparedModelProvider)


def system_blocks(system: SystemPrompt) -> list[SystemBlock]:
    """`system` as a list of blocks, checking that no stable block follows a volatile one.

    A blank string gives an empty list. Raises `ValueError` on a misordered prompt, because a
    stable block after a volatile one would silently defeat prompt caching.
    """
    if isinstance(system, str):
        return [SystemBlock(text=system)] if system.strip() else []
    blocks = list(system)
    seen_volatile = False
    for block in blocks:
        if block.volatile:
            seen_volatile = True
        elif seen_volatile:
            raise ValueError("stable system blocks must come before volatile ones")
    return blocks
