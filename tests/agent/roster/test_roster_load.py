"""Agents as files: `workspace/agents/<name>/AGENT.md`, parsed or reported with file and line."""

from __future__ import annotations

import os
from pathlib import Path

from harness.agent.roster import load_roster
from harness.tools.base import ToolRegistry
from harness.tools.catalog import ToolSettings, tools_for

RESEARCHER = """---
description: Finds and reads sources on the web.
model: claude-haiku-4-5
tools: [read, web_fetch]
max_turns: 8
temperature: 0.2
output_schema: {type: object, properties: {answer: {type: string}}, required: [answer]}
bindings: [{channel: slack, chat_id: C0123}]
---
You are a careful researcher.
"""


def _agent(workspace: Path, name: str, text: str) -> None:
    folder = workspace / "agents" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "AGENT.md").write_text(text)


def test_roster_reads_an_agents_front_matter_and_instructions(tmp_path: Path) -> None:
    # Given an agent file with every key
    _agent(tmp_path, "researcher", RESEARCHER)

    # When the workspace's agents are loaded
    roster = load_roster(tmp_path)

    # Then the agent is there as declared, named by its folder
    spec = roster.get("researcher")
    assert spec is not None and roster.errors == ()
    assert spec.description == "Finds and reads sources on the web."
    assert spec.instructions == "You are a careful researcher."
    assert (spec.model, spec.tools, spec.max_turns, spec.temperature) == (
        "claude-haiku-4-5", ("read", "web_fetch"), 8, 0.2,
    )  # fmt: skip
    assert spec.output_schema is not None and spec.output_schema["required"] == ["answer"]
    assert spec.bindings[0].chat_id == "C0123"
    assert spec.path == "agents/researcher/AGENT.md"


def test_roster_reports_a_bad_file_with_its_line_and_keeps_the_others(tmp_path: Path) -> None:
    # Given a good agent, one with an unknown key on line 3, one whose YAML breaks on line 3,
    # one with an invalid schema, and one named like the default agent
    _agent(tmp_path, "good", "---\ndescription: fine\n---\nbody\n")
    _agent(tmp_path, "typo", "---\ndescription: x\nmodle: gpt\n---\n")
    _agent(tmp_path, "broken", "---\ndescription: x\ntools: [read\n---\n")
    _agent(tmp_path, "schema", "---\ndescription: x\noutput_schema: {type: 12}\n---\n")
    _agent(tmp_path, "main", "---\ndescription: x\n---\n")

    # When the agents are loaded
    roster = load_roster(tmp_path)

    # Then the good one loads, and each other is one error naming its file and line
    assert roster.names() == ["good"]
    found = {e.path.split("/")[1]: e for e in roster.errors}
    assert set(found) == {"typo", "broken", "schema", "main"}
    assert found["typo"].line == 3 and "modle" in found["typo"].message
    assert found["broken"].line >= 3 and "YAML" in found["broken"].message
    assert found["schema"].line == 3 and "JSON Schema" in found["schema"].message
    assert found["main"].line == 1 and "default agent" in found["main"].message
    assert str(found["typo"]).startswith("agents/typo/AGENT.md:3: ")


def test_roster_never_follows_a_link_the_agent_wrote(tmp_path: Path) -> None:
    # Given an agent file that is a link to a file outside the workspace, and a linked folder
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "AGENT.md").write_text("---\ndescription: from outside\n---\n")
    workspace = tmp_path / "workspace"
    (workspace / "agents" / "linked-file").mkdir(parents=True)
    os.symlink(outside / "AGENT.md", workspace / "agents" / "linked-file" / "AGENT.md")
    os.symlink(outside, workspace / "agents" / "linked-folder")

    # When the agents are loaded
    roster = load_roster(workspace)

    # Then neither is an agent, and both are reported
    assert roster.names() == []
    assert {e.path for e in roster.errors} == {
        "agents/linked-file/AGENT.md", "agents/linked-folder/AGENT.md",
    }  # fmt: skip


def test_narrowed_registry_offers_only_named_tools_it_has(tmp_path: Path) -> None:
    # Given the fleet's tools without a shell
    fleet = ToolRegistry(tools_for(ToolSettings(allow_shell=False)))

    # When an agent asks for read and bash
    narrowed = fleet.narrowed(["read", "bash"])

    # Then it gets read only: a spec narrows what the operator allows, never widens it
    assert narrowed.names() == ["read"]
    assert fleet.narrowed([]).names() == []
