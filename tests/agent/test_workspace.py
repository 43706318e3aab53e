from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent.workspace import (
    default_shipped_skills,
    default_template,
    ensure_workspace,
)


@pytest.fixture
def template(tmp_path: Path) -> Path:
    root = tmp_path / "template"
    (root / "functions").mkdir(parents=True)
    (root / "SOUL.md").write_text("template soul\n")
    (root / "USER.md").write_text("template user\n")
    (root / "functions" / "README.md").write_text("functions readme\n")
    return root


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    root = tmp_path / "shipped"
    root.mkdir()
    (root / "memory.md").write_text("---\nname: memory\ndescription: d\n---\nv1\n")
    return root


def test_ensure_workspace_creates_folders_and_copies_the_template(
    tmp_path: Path, template: Path, shipped: Path
) -> None:
    workspace = tmp_path / "ws"

    ensure_workspace(workspace, template, shipped)

    for name in ("memory", "skills", "functions", "skills/shipped"):
        assert (workspace / name).is_dir(), f"expected folder {name} to be created"
    assert (workspace / "SOUL.md").read_text() == "template soul\n"
    assert not (workspace / "sessions").exists(), "transcripts live outside the workspace"
    assert (workspace / "functions" / "README.md").read_text() == "functions readme\n"
    leftovers = [p.name for p in workspace.rglob(".*.tmp")]
    assert leftovers == [], f"temporary files left behind: {leftovers}"


def test_ensure_workspace_never_overwrites_user_files(
    tmp_path: Path, template: Path, shipped: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "SOUL.md").write_text("my own soul\n")
    (workspace / "USER.md").write_text("")

    ensure_workspace(workspace, template, shipped)
    (template / "SOUL.md").write_text("a newer template soul\n")
    ensure_workspace(workspace, template, shipped)

    assert (workspace / "SOUL.md").read_text() == "my own soul\n"
    assert (workspace / "USER.md").read_text() == "", "an emptied user file must stay empty"


def test_ensure_workspace_is_idempotent(tmp_path: Path, template: Path, shipped: Path) -> None:
    workspace = tmp_path / "ws"
    ensure_workspace(workspace, template, shipped)
    first = {p.relative_to(workspace): p.read_bytes() for p in workspace.rglob("*") if p.is_file()}

    ensure_workspace(workspace, template, shipped)

    second = {p.relative_to(workspace): p.read_bytes() for p in workspace.rglob("*") if p.is_file()}
    assert second == first


def test_ensure_workspace_mirrors_shipped_skills_and_refreshes_them(
    tmp_path: Path, template: Path, shipped: Path
) -> None:
    workspace = tmp_path / "ws"
    ensure_workspace(workspace, template, shipped)
    mirror = workspace / "skills" / "shipped"
    (mirror / "memory.md").write_text("edited by the agent")
    (shipped / "memory.md").write_text("---\nname: memory\ndescription: d\n---\nv2\n")
    (shipped / "notes.txt").write_text("not a skill")

    ensure_workspace(workspace, template, shipped)

    assert (mirror / "memory.md").read_text().endswith("v2\n"), "the mirror must be rewritten"
    assert sorted(p.name for p in mirror.iterdir()) == ["memory.md"]


def test_ensure_workspace_removes_mirrored_skills_no_longer_shipped(
    tmp_path: Path, template: Path, shipped: Path
) -> None:
    workspace = tmp_path / "ws"
    ensure_workspace(workspace, template, shipped)

    (shipped / "memory.md").unlink()
    ensure_workspace(workspace, template, shipped)

    assert list((workspace / "skills" / "shipped").iterdir()) == []


def test_ensure_workspace_tolerates_missing_template_and_skills(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = tmp_path / "ws"

    ensure_workspace(workspace, tmp_path / "no-template", tmp_path / "no-skills")

    assert (workspace / "memory").is_dir()
    assert "does not exist" in caplog.text


def test_default_folders_point_at_the_repository() -> None:
    assert (default_template() / "SOUL.md").is_file()
    assert (default_shipped_skills() / "durable-functions.md").is_file()
