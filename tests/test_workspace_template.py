"""The workspace template and the workspace: what the fleet and the agent write stays out of a
clone's `git status` (issue 32: memory distillation rewrote the tracked `workspace/MEMORY.md`,
so a clone's `git pull` conflicted)."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.agent.memory.history import MemoryHistory
from harness.agent.workspace import default_shipped_skills, default_template, ensure_workspace

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path("harness") / "_shipped" / "workspace"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A repository tracking exactly what this one tracks of `.gitignore`, `workspace/` and
    the template, committed (a clone, without the rest of the tree)."""
    if not (ROOT / ".git").exists():
        pytest.skip("needs the repository's git metadata")
    repo = tmp_path / "repo"
    tracked = _git(ROOT, "ls-files", "--", ".gitignore", "workspace", str(TEMPLATE)).split()
    for name in tracked:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-f", "--", *tracked)
    _git(repo, "commit", "-qm", "as tracked upstream")
    return repo


def test_the_template_is_not_the_default_workspace() -> None:
    # The default workspace (./workspace) is the fleet's to write; the template must not be it
    assert default_template().resolve() == (ROOT / TEMPLATE).resolve()
    assert (default_template() / "SOUL.md").is_file()


def test_a_clone_stays_clean_when_the_fleet_and_the_agent_write_the_workspace(
    clone: Path,
) -> None:
    # Given the fleet's first start in the clone, which creates ./workspace from the template
    workspace = clone / "workspace"
    ensure_workspace(workspace, clone / TEMPLATE, default_shipped_skills())
    assert (workspace / "MEMORY.md").read_text() == (clone / TEMPLATE / "MEMORY.md").read_text()
    # When a distillation rewrites MEMORY.md, the agent edits USER.md and SOUL.md, writes a
    # function, notes and a daily log, and the embedded Redis writes its state
    MemoryHistory(workspace).replace(
        "# Memory\n\n- likes tea\n", reason="distillation (run r1)", now=datetime.now(UTC)
    )
    for name in ("USER.md", "SOUL.md", "functions/example_ping.py"):
        with (workspace / name).open("a") as file:
            file.write("\n# changed by the agent\n")
    for name in ("functions/tick.py", "notes/today.md", "memory/2026-01-01.md"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("written by the agent\n")
    (clone / ".harness" / "redis").mkdir(parents=True)
    (clone / ".harness" / "redis" / "appendonly.aof").write_text("state")
    # Then git sees no change (a `git pull` cannot conflict), and the template is as shipped
    assert _git(clone, "status", "--porcelain") == ""
    assert set(_git(clone, "ls-files", "workspace").split()) <= {
        "workspace/.gitignore",
        "workspace/README.md",
    }


def test_a_missing_workspace_file_is_created_from_the_template_again(tmp_path: Path) -> None:
    # Given a workspace whose MEMORY.md was deleted
    workspace = tmp_path / "workspace"
    ensure_workspace(workspace, default_template(), default_shipped_skills())
    (workspace / "MEMORY.md").unlink()
    # When the fleet starts again
    ensure_workspace(workspace, default_template(), default_shipped_skills())
    # Then the template's MEMORY.md is back
    assert (workspace / "MEMORY.md").read_text() == (default_template() / "MEMORY.md").read_text()
