"""Which tool a model call must use: `tool_choice`, checked once for every provider.

    provider.complete(system=..., messages=..., tools=[route], tool_choice="route")

The neutral values are `"auto"` (the model decides), `"any"` (it must call some tool;
`"required"`, OpenAI's word, means the same), `"none"` (it must not call one) or a tool's
name (it must call that one). The mode words win over a tool of the same name. Each provider
maps the checked value to its own wire form (`anthropic_wire.convert_tool_choice`,
`openai.convert_tool_choice`); None sends nothing, so a request without a choice is
byte-identical to one made before the field existed (the cached prompt prefix is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from harness.llm.types import ToolSpec

ToolChoiceMode = Literal["auto", "any", "none"]
"""The choices that name no tool; an agent's file may set only these (`AgentSpec.tool_choice`)."""
MODES: tuple[ToolChoiceMode, ...] = ("auto", "any", "none")
_ALIASES = {"required": "any"}


def check_tool_choice(choice: str | None, tools: Sequence[ToolSpec]) -> str | None:
    """`choice` as the providers send it: None (send nothing), a mode of `MODES`, or the name
    of one of `tools`. Pure; call it before any request is made.

    With no tools offered, `"auto"` and `"none"` say nothing and become None. Raises
    `ValueError` for a name that is not among `tools`, and for a forced call (`"any"` or a
    name) with no tools to call.
    """
    if choice is None:
        return None
    mode = _ALIASES.get(choice, choice)
    if not tools:
        if mode in ("auto", "none"):
            return None
        raise ValueError(f"tool_choice {choice!r} forces a tool call, but no tools are offered")
    if mode in MODES:
        return mode
    names = [tool.name for tool in tools]
    if choice not in names:
        raise ValueError(
            f"tool_choice {choice!r} is neither auto, any, required, none nor a tool offered "
            f"({', '.join(names)})"
        )
    return choice
