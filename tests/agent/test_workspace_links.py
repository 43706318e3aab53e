"""Fleet-side readers and writers of the workspace leave links alone (`workspace_files`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.agent.memory.distill import DistillState, daily_logs, save_state
from harness.agent.memory.history import MemoryHistory
from harness.agent.skills import load_skills
from harness.agent.workspace import ensure_workspace
from harness.sidecar.loader import function_files
from harness.workspace_files import UnsafePathError

SKILL = "---\nname: {name}\ndescription: does {name}\n---\nbody\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(SKILL.format(name="stolen"))
    return folder


def test_skills_skip_a_linked_skill_and_a_linked_folder(tmp_path: Path, outside: Path) -> None:
    # Given a real skill, a skill linked out, and skills/shipped linked out
    workspace = tmp_path / "ws"
    (workspace / "skills").mkdir(parents=True)
    (workspace / "skills" / "mine.md").write_text(SKILL.format(name="mine"))
    (workspace / "skills" / "linked.md").symlink_to(outside / "secret.md")
    (workspace / "skills" / "shipped").symlink_to(outside)
    # When loading the skills
    names = [skill.name for skill in load_skills(workspace)]
    # Then only the real one is listed
    assert names == ["mine"]


def test_daily_logs_leave_out_links(tmp_path: Path, outside: Path) -> None:
    # Given one real log and one linked out
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "2026-01-01.md").write_text("# 2026-01-01\n")
    (memory / "2026-01-02.md").symlink_to(outside / "secret.md")
    # When listing the logs to distil
    logs = [path.name for path in daily_logs(tmp_path)]
    # Then the link is not one of them
    assert logs == ["2026-01-01.md"]


def test_distill_state_writes_nothing_through_a_linked_memory_folder(
    tmp_path: Path, outside: Path
) -> None:
    # Given memory/ linked to an outside folder
    (tmp_path / "memory").symlink_to(outside)
    # When / Then saving the positions is refused, and nothing is written outside
    with pytest.raises(UnsafePathError):
        save_state(tmp_path, DistillState())
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_memory_history_refuses_a_linked_memory_file(tmp_path: Path, outside: Path) -> None:
    # Given MEMORY.md linked out
    (tmp_path / "MEMORY.md").symlink_to(outside / "secret.md")
    history = MemoryHistory(tmp_path)
    # When / Then a replacement refuses to read (and so to save) it, and nothing changes
    with pytest.raises(UnsafePathError):
        history.replace("new", reason="test", now=datetime.now(UTC))
    assert (outside / "secret.md").read_text() == SKILL.format(name="stolen")


def test_ensure_workspace_writes_nothing_through_links(tmp_path: Path, outside: Path) -> None:
    # Given a template with SOUL.md, a workspace whose SOUL.md and skills/ are links out
    template, shipped, workspace = tmp_path / "template", tmp_path / "shipped", tmp_path / "ws"
    template.mkdir()
    (template / "SOUL.md").write_text("soul")
    shipped.mkdir()
    (shipped / "memory.md").write_text(SKILL.format(name="memory"))
    workspace.mkdir()
    (workspace / "SOUL.md").symlink_to(outside / "secret.md")
    (workspace / "skills").symlink_to(outside)
    # When the workspace is completed
    ensure_workspace(workspace, template, shipped)
    # Then the links are left alone and nothing was written outside
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert (outside / "secret.md").read_text() == SKILL.format(name="stolen")
    assert (workspace / "SOUL.md").is_symlink()


def test_function_files_skip_links_and_a_linked_folder(tmp_path: Path, outside: Path) -> None:
    # Given functions/ with a real file and a link; and a second workspace whose functions/
    # is a link
    functions = tmp_path / "ws" / "functions"
    functions.mkdir(parents=True)
    (functions / "job.py").write_text("x = 1\n")
    (functions / "linked.py").symlink_to(outside / "secret.md")
    (outside / "evil.py").write_text("x = 2\n")
    (tmp_path / "ws2").mkdir()
    (tmp_path / "ws2" / "functions").symlink_to(outside)
    # When listing the files to load
    files, _ = function_files(functions)
    linked, _ = function_files(tmp_path / "ws2" / "functions")
    # Then only the real file is loaded, and nothing from the linked folder
    assert [path.name for path in files] == ["job.py"]
    assert linked == []
