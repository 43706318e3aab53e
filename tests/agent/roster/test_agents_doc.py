"""docs/agents.md's files are what they claim: every agent and network it shows loads, and its
binding parses."""

from __future__ import annotations

import re
from pathlib import Path

from harness.agent.networks.load import load_networks
from harness.agent.roster import load_roster
from harness.agent.roster.bindings import parse_bindings

DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"


def _files() -> dict[str, str]:
    """Each `workspace/...` path the page names, with the Markdown block that follows it."""
    text = DOC.read_text()
    found = re.findall(r"`workspace/([^`]+\.md)`:\s*\n\n```markdown\n(.*?)```", text, re.S)
    return dict(found)


def test_agents_doc_examples_load_without_errors(tmp_path: Path) -> None:
    # Given the agent and network files docs/agents.md shows, written to a workspace
    files = _files()
    assert {"agents/researcher/AGENT.md", "agents/coder/AGENT.md", "networks/triage.md",
            "networks/nightly.md"} <= set(files)  # fmt: skip
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "agents" / "writer").mkdir()
    (tmp_path / "agents" / "writer" / "AGENT.md").write_text("---\ndescription: w\n---\n")

    # When they are loaded as the fleet loads them
    roster = load_roster(tmp_path)
    networks = load_networks(tmp_path, roster)

    # Then every one loads, and the page's binding parses
    assert roster.errors == () and networks.errors == ()
    assert {"researcher", "coder"} <= set(roster.names())
    assert networks.names() == ["nightly", "triage"]
    binding = re.search(r"AGENT_BINDINGS=(\S+)", DOC.read_text())
    assert binding is not None and parse_bindings(binding.group(1))
