"""The tools offered to the model are built once per tool, not at every think."""

from __future__ import annotations

from dataclasses import dataclass

from harness.agent.deps import agent_deps
from harness.tools import Tool, ToolContext, ToolParams, ToolRegistry
from tests.agent.conftest import AgentRig


class NoteParams(ToolParams):
    text: str


class NoteTool(Tool[NoteParams]):
    name = "note"
    description = "Writes a note."
    parameters = NoteParams

    def run(self, params: NoteParams, ctx: ToolContext) -> str:
        return params.text


class _Source:
    """Tools that come and go, as an MCP server's do."""

    def __init__(self) -> None:
        self.now: list[Tool[NoteParams]] = []

    def tools(self) -> list[Tool[NoteParams]]:
        return list(self.now)


def test_a_tools_spec_is_built_once_and_again_when_the_tool_changes(agent: AgentRig) -> None:
    # Given a registry with a tool, and a source whose tool comes later
    deps, source = agent_deps(), _Source()
    registry = ToolRegistry([NoteTool()])
    registry.attach(source)
    # When its specs are asked for twice
    first, second = deps.tool_specs(registry), deps.tool_specs(registry)
    # Then they are the registry's, and the same objects the second time
    assert [(s.name, s.description, s.parameters) for s in first] == [
        (s.name, s.description, s.parameters) for s in registry.specs()
    ]
    assert first[0] is second[0]
    # When the source offers a tool, and then the registered tool's description changes
    late = NoteTool()
    late.name = "late_note"
    source.now.append(late)
    registry.offered()[0].description = "Writes a short note."
    third = deps.tool_specs(registry)
    # Then the new tool is offered and the changed one is built again
    assert [s.name for s in third] == ["note", "late_note"]
    assert third[0] is not first[0] and third[0].description == "Writes a short note."


@dataclass(eq=True)
class ValueTool(NoteTool):
    """A plug-in's tool written as a dataclass that compares by value: unhashable."""

    label: str = "v"


def test_an_unhashable_tool_is_still_offered(agent: AgentRig) -> None:
    # Given a registry with a tool that cannot be a dictionary key
    registry = ToolRegistry([ValueTool()])
    # When its specs are asked for, twice
    first, second = agent_deps().tool_specs(registry), agent_deps().tool_specs(registry)
    # Then it is offered each time, with its schema
    assert [s.name for s in first] == [s.name for s in second] == ["note"]
    assert "text" in first[0].parameters["properties"], first[0].parameters
