"""The model provider layer: a neutral conversation, one `ModelProvider` per wire API.

types.py        Message, ToolCall, ToolResult, ToolSpec, Usage, AssistantTurn, SystemBlock
provider.py     the ModelProvider protocol
tool_choice.py  which tool a call must use, checked for every provider
anthropic.py    Anthropic Messages API
openai.py       OpenAI Chat Completions (and compatible servers)
errors.py       TransientModelError, ContextOverflowError, PermanentModelError, ...
factory.py      build_provider / build_fallback_provider from ModelSettings
guard.py        forbid_real_model_calls, for tests
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.llm.errors import (
    ContextOverflowError,
    ModelCancelledError,
    ModelError,
    PermanentModelError,
    TransientModelError,
)
from harness.llm.provider import ModelProvider, SystemPrompt
from harness.llm.settings import ModelSettings
from harness.llm.types import (
    AssistantTurn,
    Message,
    ReasoningBlock,
    StopReason,
    SystemBlock,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)

if TYPE_CHECKING:
    from harness.llm.factory import build_fallback_provider, build_provider

__all__ = [
    "AssistantTurn",
    "ContextOverflowError",
    "Message",
    "ModelCancelledError",
    "ModelError",
    "ModelProvider",
    "ModelSettings",
    "PermanentModelError",
    "ReasoningBlock",
    "StopReason",
    "SystemBlock",
    "SystemPrompt",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "TransientModelError",
    "Usage",
    "build_fallback_provider",
    "build_provider",
]


def __getattr__(name: str) -> Any:
    # The factory is loaded only when asked for, so that importing the types (session store,
    # journal) stays as cheap as it can; no SDK is imported before a call in any case.
    if name in ("build_provider", "build_fallback_provider"):
        from harness.llm import factory

        return getattr(factory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
