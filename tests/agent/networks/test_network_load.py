"""Networks as files: `workspace/networks/<name>.md`, parsed or reported with file and line."""

from __future__ import annotations

from pathlib import Path

from harness.agent.networks import load_networks
from harness.agent.networks.spec import RulesRouter


def _file(workspace: Path, relative: str, text: str) -> None:
    path = workspace / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _agents(workspace: Path, *names: str) -> None:
    for name in names:
        _file(workspace, f"agents/{name}/AGENT.md", f"---\ndescription: {name}\n---\n")


def _errors(workspace: Path) -> list[str]:
    return [str(e) for e in load_networks(workspace).errors]


def test_network_file_is_read_with_its_router_state_and_instructions(tmp_path: Path) -> None:
    # Given two agents and a network of them with every key
    _agents(tmp_path, "writer", "reviewer")
    _file(
        tmp_path,
        "networks/essay.md",
        "---\ndescription: Writes.\nagents: [writer, reviewer]\nrouter:\n  kind: rules\n"
        "  model: claude-haiku-4-5\n  rules:\n"
        "    - {when: {state: done, equals: true}, then: stop}\n"
        "    - when: [{state: n, at_least: 2}, {last_agent: writer}]\n      then: reviewer\n"
        "    - {then: agent}\n"
        "state: {type: object, properties: {done: {type: boolean}}}\nmax_iterations: 4\n"
        "---\nWrite, then review.\n",
    )

    # When the networks are loaded
    networks = load_networks(tmp_path)

    # Then it is there as declared
    spec = networks.get("essay")
    assert spec is not None and networks.errors == ()
    assert spec.agents == ("writer", "reviewer") and spec.max_iterations == 4
    assert isinstance(spec.router, RulesRouter) and spec.router.hands_over()
    assert spec.instructions == "Write, then review." and spec.path == "networks/essay.md"


def test_network_naming_an_unknown_agent_is_a_load_error_with_its_line(tmp_path: Path) -> None:
    # Given a network whose agent list names one agent that exists and one (line 5) that does not
    _agents(tmp_path, "writer")
    _file(
        tmp_path,
        "networks/essay.md",
        "---\ndescription: x\nagents:\n  - writer\n  - ghost\nrouter: {kind: agent}\n---\n",
    )

    # When the networks are loaded
    networks = load_networks(tmp_path)

    # Then it is left out, and the error names the file, the line and the agent
    assert networks.names() == []
    assert _errors(tmp_path) == [
        "networks/essay.md:5: agents: no agent named 'ghost' (agents/ghost/AGENT.md)"
    ]


def test_bad_network_files_are_reported_at_the_line_at_fault(tmp_path: Path) -> None:
    # Given an unknown key (line 4), a rule sending work to a non-member (line 6), a rule
    # after a catch-all (line 4), a state schema that is not an object (line 4), and a
    # sequence naming a non-member (line 4)
    _agents(tmp_path, "writer", "coder")
    head = "---\ndescription: x\nagents: [writer]\n"
    _file(tmp_path, "networks/a.md", f"{head}routr: {{kind: agent}}\n---\n")
    _file(
        tmp_path,
        "networks/b.md",
        f"{head}router:\n  kind: rules\n  rules:\n    - {{then: coder}}\n---\n",
    )
    _file(
        tmp_path, "networks/c.md", f"{head}router: {{kind: rules, rules: [{{then: writer}}, "
        "{then: stop}]}\n---\n",
    )  # fmt: skip
    agent_routed = "router: {kind: agent}\n---\n"
    _file(tmp_path, "networks/d.md", f"{head}state: {{type: array}}\n{agent_routed}")
    _file(tmp_path, "networks/e.md", f"{head}router: {{kind: sequence, order: [coder]}}\n---\n")

    # When the networks are loaded
    errors = _errors(tmp_path)

    # Then each file is reported once, at its line
    assert [e.split(": ", 1)[0] for e in errors] == [
        "networks/a.md:4", "networks/b.md:7", "networks/c.md:4", "networks/d.md:4",
        "networks/e.md:4",
    ], errors  # fmt: skip
    assert "routr" in errors[0] and "'coder' is not one of" in errors[1], errors
    assert "never run" in errors[2] and "type: object" in errors[3], errors


def test_a_condition_needs_exactly_one_test_of_its_state_key(tmp_path: Path) -> None:
    # Given a rule testing a state key two ways at once
    _agents(tmp_path, "writer")
    _file(
        tmp_path,
        "networks/x.md",
        "---\ndescription: x\nagents: [writer]\nrouter:\n  kind: rules\n  rules:\n"
        "    - when: {state: n, equals: 1, missing: false}\n      then: stop\n---\n",
    )

    # When loaded
    [error] = _errors(tmp_path)

    # Then the error is at the rule's `when`
    assert error.startswith("networks/x.md:7: ") and "exactly one test" in error, error


def test_a_link_in_networks_is_not_followed(tmp_path: Path) -> None:
    # Given a network file that is a link to a file elsewhere
    _agents(tmp_path, "writer")
    outside = tmp_path.parent / "outside.md"
    outside.write_text("---\ndescription: x\nagents: [writer]\nrouter: {kind: agent}\n---\n")
    (tmp_path / "networks").mkdir()
    (tmp_path / "networks" / "sneaky.md").symlink_to(outside)

    # When loaded
    networks = load_networks(tmp_path)

    # Then it is not a network, and it is reported
    assert networks.names() == []
    assert _errors(tmp_path) == ["networks/sneaky.md:1: not a regular file (link): not read"]
