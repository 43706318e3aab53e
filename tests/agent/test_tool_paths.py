"""A path-taking call is approved and run on the path it resolves to (`harness.agent.tool_paths`).

This rig's runs have nobody to ask, and `AGENT_APPROVAL_UNATTENDED` is `deny`: a call that
needs approval is refused at once, so "asks" shows as "refused, nobody can be asked"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply, anthropic_tool_results


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [str(block["content"]) for block in anthropic_tool_results(body)]


def _spellings(workspace: Path) -> dict[str, str]:
    """Ways to name `functions/helper.py` other than that string."""
    (workspace / "fn").symlink_to("functions")
    (workspace / "notes").mkdir(exist_ok=True)
    return {
        "absolute": str(workspace.resolve() / "functions" / "helper.py"),
        "dot-dot": "./notes/../functions/helper.py",
        "linked folder": "fn/helper.py",
    }


@pytest.mark.parametrize("spelling", ["absolute", "dot-dot", "linked folder"])
def test_write_under_functions_asks_whatever_the_path_spelling(
    agent: AgentRig, spelling: str
) -> None:
    # Given a path to functions/helper.py spelled another way
    path = _spellings(agent.workspace)[spelling]
    agent.model.script(
        Reply.tool("write", {"path": path, "content": "x = 1\n"}), Reply.answer("ok")
    )
    # When the model writes it
    agent.say("write the helper")
    # Then the call needed approval (refused: nobody can be asked here) and wrote nothing
    (result,) = _tool_results(agent.model.requests[1].body)
    assert "nobody can be asked" in result, result
    assert not (agent.workspace / "functions" / "helper.py").exists()


def test_write_outside_functions_runs_on_its_resolved_path(agent: AgentRig) -> None:
    # Given a path that resolves to notes/todo.md by way of `..`
    agent.model.script(
        Reply.tool("write", {"path": "functions/../notes/todo.md", "content": "milk"}),
        Reply.answer("ok"),
    )
    # When the model writes it
    agent.say("note it")
    # Then it ran without asking and says where the file went
    (result,) = _tool_results(agent.model.requests[1].body)
    assert result == "wrote 4 bytes to notes/todo.md", result
    assert (agent.workspace / "notes" / "todo.md").read_text() == "milk"


def test_write_through_a_link_out_is_refused_before_it_asks_or_runs(
    agent: AgentRig, tmp_path: Path
) -> None:
    # Given out -> a folder outside the workspace
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (agent.workspace / "out").symlink_to(outside)
    agent.model.script(
        Reply.tool("edit", {"path": "out/x.py", "edits": [{"old_text": "a", "new_text": "b"}]}),
        Reply.tool("write", {"path": "out/x.py", "content": "x"}),
        Reply.answer("ok"),
    )
    # When the model edits and writes through it
    agent.say("write there")
    # Then both are refused as outside the workspace, and nothing is written there
    results = _tool_results(agent.model.requests[1].body) + _tool_results(
        agent.model.requests[2].body
    )
    assert all("outside the workspace" in r for r in results), results
    assert list(outside.iterdir()) == []
