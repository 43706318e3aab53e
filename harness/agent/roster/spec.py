"""What one agent file declares: `AgentSpec`, validated from its front matter and body.

    ---
    description: Finds and reads sources on the web; answers with citations.
    model: claude-haiku-4-5          # optional; provider too, and a fallback of each
    tools: [read, web_fetch, remember]
    max_turns: 8
    temperature: 0.2
    tool_choice: any                 # optional: auto, any (a tool each call) or none
    output_schema: {type: object, properties: {answer: {type: string}}, required: [answer]}
    bindings: [{channel: slack, chat_id: C0123}]
    ---
    You are a careful researcher. ...

Everything under the workspace may have been written by the agent, so a spec can only narrow
what the operator allows, never widen it: `tools` picks from the tools the fleet has (bash
only where the operator allows a shell), every call still goes through approval, and
`provider` names a provider the operator configured. Unknown keys are errors, not ignored.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.llm.tool_choice import ToolChoiceMode

DEFAULT_AGENT = "main"
"""The name of the default agent: the one with `SOUL.md` and `USER.md`, which answers every chat
no binding names another agent for. No file may declare it."""

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
"""An agent's name, its folder's name: lower-case, so that `delegate_to_<name>` is a valid tool
name for every provider."""

ProviderName = Literal["anthropic", "openai"]
HistoryMode = Literal["none", "summary", "full"]


class Binding(BaseModel):
    """Where an agent answers: every chat of `channel`, or of one Slack workspace (`team`), or
    one chat, or one sender. Empty fields match anything; a binding naming more fields wins
    over one naming fewer (`harness.agent.roster.bindings`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str = Field(min_length=1, max_length=64)
    team: str | None = Field(default=None, min_length=1, max_length=200)
    """A workspace of the platform (Slack's team id), read from the message's `team_id`."""
    chat_id: str | None = Field(default=None, min_length=1, max_length=200)
    sender: str | None = Field(default=None, min_length=1, max_length=200)

    def specificity(self) -> int:
        """How many fields it names: the most specific matching binding wins."""
        named = (self.team, self.chat_id, self.sender)
        return 1 + sum(value is not None for value in named)


class AgentSpec(BaseModel):
    """One named agent. `instructions` is the file's body (its system prompt's identity)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = Field(min_length=1, max_length=1_000)
    instructions: str = ""
    model: str | None = Field(default=None, min_length=1, max_length=200)
    provider: ProviderName | None = None
    fallback_model: str | None = Field(default=None, min_length=1, max_length=200)
    fallback_provider: ProviderName | None = None
    tools: tuple[str, ...] | None = None
    """The tools it may use, by name (built-in, MCP and plug-in); None: the sub-agent's set
    (file tools, remember, web_fetch, send_file)."""
    delegates: tuple[str, ...] = ()
    """The agents it may delegate to (`delegate_to_<name>`); the default agent may delegate to
    every agent."""
    max_turns: int | None = Field(default=None, ge=1, le=200)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1, le=200_000)
    tool_choice: ToolChoiceMode | None = None
    """How its loop's model calls use tools: `auto`, `any` (each call must call a tool, so it
    answers only on the last iteration, where tools are off) or `none`; None: the provider's
    default (auto). Never one tool's name: forced on every call, the agent could not answer."""
    output_schema: dict[str, Any] | None = None
    bindings: tuple[Binding, ...] = ()
    path: str = ""
    """The file it came from, workspace-relative (`agents/<name>/AGENT.md`)."""

    @field_validator("name")
    @classmethod
    def _name_is_a_tool_suffix(cls, name: str) -> str:
        if not NAME_PATTERN.match(name):
            raise ValueError(
                "an agent's name (its folder) must be 1-40 of a-z, 0-9, _ and -, starting with "
                f"a letter; got {name!r}"
            )
        if name == DEFAULT_AGENT:
            raise ValueError(f"{DEFAULT_AGENT!r} is the default agent (SOUL.md); pick another name")
        return name

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())

    @field_validator("output_schema")
    @classmethod
    def _is_a_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            # jsonschema takes ~40 ms to import; `harness.settings` reaches this module
            # (bindings), and only an agent file with an output schema needs it.
            import jsonschema

            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"not a JSON Schema: {exc.message}") from exc
        return schema

    @field_validator("tools", "delegates")
    @classmethod
    def _unique_names(cls, names: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if names is not None:
            for name in names:
                if not name or len(name) > 128:
                    raise ValueError(f"not a tool or agent name: {name!r}")
        return names if names is None else tuple(dict.fromkeys(names))
