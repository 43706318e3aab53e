from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from harness.agent.skills import Skill, load_skills, skills_index
from harness.agent.workspace import default_shipped_skills, default_template, ensure_workspace
from harness.events import parse_event
from harness.runtime.functions import FunctionRegistry
from harness.runtime.steps import Context
from harness.tools import ToolContext, default_registry
from harness.tools.paths import resolve_in_workspace


def _skill(folder: Path, file: str, name: str, description: str, body: str = "body") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"
    (folder / file).write_text(text)


def test_load_skills_reads_shipped_and_user_skills_sorted_by_name(tmp_path: Path) -> None:
    _skill(tmp_path / "skills" / "shipped", "zeta.md", "zeta", "last")
    _skill(tmp_path / "skills", "alpha.md", "alpha", "first")

    skills = load_skills(tmp_path)

    assert skills == [
        Skill("alpha", "first", "skills/alpha.md"),
        Skill("zeta", "last", "skills/shipped/zeta.md"),
    ]


def test_load_skills_user_skill_overrides_shipped_one_by_file_name(tmp_path: Path) -> None:
    _skill(tmp_path / "skills" / "shipped", "memory.md", "memory", "shipped version")
    _skill(tmp_path / "skills", "memory.md", "my-memory", "user version")
    _skill(tmp_path / "skills", "other.md", "memory", "same name, other file")

    skills = load_skills(tmp_path)

    assert [(s.name, s.path) for s in skills] == [
        ("memory", "skills/other.md"),
        ("my-memory", "skills/memory.md"),
    ]
    assert "shipped version" not in skills_index(skills)


@pytest.mark.parametrize(
    "text",
    [
        "no front matter at all\n",
        "---\nname: [unclosed\ndescription: x\n---\n",
        "---\nname: only-a-name\n---\n",
        "---\nname: x\ndescription: ''\n---\n",
        "---\n- a\n- list\n---\n",
        "---\nname: x\ndescription: never closed\n",
    ],
    ids=["none", "bad-yaml", "no-description", "empty-description", "not-a-mapping", "unclosed"],
)
def test_load_skills_skips_bad_front_matter_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "bad.md").write_text(text)
    _skill(tmp_path / "skills", "good.md", "good", "fine")

    skills = load_skills(tmp_path)

    assert [s.name for s in skills] == ["good"]
    assert "skills/bad.md skipped" in caplog.text


def test_load_skills_broken_user_skill_does_not_hide_the_shipped_one(tmp_path: Path) -> None:
    _skill(tmp_path / "skills" / "shipped", "memory.md", "memory", "shipped")
    (tmp_path / "skills" / "memory.md").write_text("no front matter\n")

    skills = load_skills(tmp_path)

    assert [s.path for s in skills] == ["skills/shipped/memory.md"]


def test_skills_index_lists_one_line_per_skill(tmp_path: Path) -> None:
    _skill(tmp_path / "skills", "a.md", "a", "does\n  many things")

    index = skills_index(load_skills(tmp_path))

    assert index == "- a: does many things (read skills/a.md)"


def test_shipped_skills_are_valid_and_readable_through_the_read_tool(tmp_path: Path) -> None:
    ensure_workspace(tmp_path, default_template(), default_shipped_skills())
    shipped = sorted(p.name for p in default_shipped_skills().glob("*.md"))

    skills = load_skills(tmp_path)

    assert sorted(Path(s.path).name for s in skills) == shipped, "every shipped skill must load"
    registry = default_registry(allow_shell=False)
    for skill in skills:
        assert resolve_in_workspace(tmp_path, skill.path).is_file()
        outcome = registry.execute("read", {"path": skill.path}, ToolContext(workspace=tmp_path))
        assert not outcome.is_error, outcome.content
        assert f"name: {skill.name}" in outcome.content


def test_durable_functions_skill_examples_declare_valid_functions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = FunctionRegistry()
    monkeypatch.setattr("harness.runtime.functions.REGISTRY", registry)
    text = (default_shipped_skills() / "durable-functions.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)

    for block in blocks:
        exec(compile(block, "durable-functions.md", "exec"), {})

    ids = [fn.id for fn in registry.all()]
    assert ids == [
        "check-build",
        "morning-brief",
        "morning-triage",
        "nightly-digest",
        "welcome-new-customer",
    ]
    sent: list[dict[str, Any]] = []
    triage = registry.get("morning-triage")
    assert triage is not None
    triage.handler(cast(Context, _RecordingContext(sent)))
    assert [parse_event(e).name for e in sent] == ["agent.message.received"]


class _RecordingStep:
    def __init__(self, sent: list[dict[str, Any]]) -> None:
        self.sent = sent

    def send_event(self, step_id: str, event: dict[str, Any]) -> str:
        self.sent.append(event)
        return step_id


class _RecordingContext:
    """Just enough of `harness.runtime.Context` for a handler that only sends an event."""

    def __init__(self, sent: list[dict[str, Any]]) -> None:
        self.step = _RecordingStep(sent)


def test_function_skills_say_to_test_run_what_you_write() -> None:
    # Given the shipped skills about functions
    managing = (default_shipped_skills() / "managing-functions.md").read_text()
    durable = (default_shipped_skills() / "durable-functions.md").read_text()
    triage = durable[durable.index("# After writing it") : durable.index("def morning_triage")]

    # Then each says to test-run a function with function_run and read a failure with
    # runs_show, the morning-triage template shows it, and `loaded` claims no more than it is
    for text in (managing, durable, triage):
        assert "function_run" in text and "runs_show" in text
    assert "only means the file imported" in durable
    assert "does not mean the handler works" in managing


def test_load_skills_unchanged_folders_are_not_parsed_again(
    tmp_path: Path, settled_files: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two skills, loaded once, and YAML's parser counting its calls from then on
    _skill(tmp_path / "skills" / "shipped", "memory.md", "memory", "shipped")
    _skill(tmp_path / "skills", "mine.md", "mine", "the user's")
    first = load_skills(tmp_path)
    parses: list[str] = []
    real = yaml.safe_load

    def counting(stream: Any) -> Any:
        parses.append(str(stream))
        return real(stream)

    monkeypatch.setattr(yaml, "safe_load", counting)
    # When they are loaded again, as every turn's prompt does
    again = load_skills(tmp_path)
    # Then nothing was parsed, and the skills are the same
    assert again == first
    assert parses == [], f"an unchanged skills folder was parsed again: {parses}"


def test_load_skills_sees_a_skill_changed_between_turns(
    tmp_path: Path, settled_files: None
) -> None:
    # Given a skill, loaded
    _skill(tmp_path / "skills", "mine.md", "mine", "old text")
    load_skills(tmp_path)
    # When the agent rewrites it (same size), and adds another
    _skill(tmp_path / "skills", "mine.md", "mine", "new text")
    _skill(tmp_path / "skills", "more.md", "more", "added")
    # Then the next load has both as they are now
    assert [(s.name, s.description) for s in load_skills(tmp_path)] == [
        ("mine", "new text"),
        ("more", "added"),
    ]


def test_load_skills_a_skill_replaced_by_a_link_is_skipped_as_before(
    tmp_path: Path, settled_files: None, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a skill, loaded, and outside the workspace a file that looks like one
    workspace = tmp_path / "ws"
    _skill(workspace / "skills", "mine.md", "mine", "mine")
    _skill(tmp_path / "outside", "secret.md", "secret", "SECRET")
    load_skills(workspace)
    # When the skill becomes a link to that file
    (workspace / "skills" / "mine.md").unlink()
    (workspace / "skills" / "mine.md").symlink_to(tmp_path / "outside" / "secret.md")
    # Then it is left out with the warning, at every load
    assert load_skills(workspace) == []
    assert load_skills(workspace) == []
    warned = [r for r in caplog.records if "skills/mine.md skipped" in r.getMessage()]
    assert len(warned) == 2, caplog.text
