"""The template workspace: what the agent writes stays out of the repository's `git status`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_files_the_agent_writes_leave_git_status_clean(tmp_path: Path) -> None:
    # Given a repository holding the template workspace, committed
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "workspace", repo / "workspace")
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    _git(repo, "init", "-q")
    _git(repo, "add", "-f", "workspace")  # shipped files are added on purpose (see its .gitignore)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "template")
    shipped = set(_git(repo, "ls-files").split())
    assert "workspace/SOUL.md" in shipped, "expected the template files to stay tracked"
    # When the agent writes notes, skills, sessions, memory and an inbox, and the fleet its state
    for path in ("notes/today.md", "skills/new/SKILL.md", "sessions/s1.jsonl",
                 "memory/2026-01-01.md", "inbox/file.txt"):  # fmt: skip
        target = repo / "workspace" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("written by the agent")
    (repo / ".harness" / "redis").mkdir(parents=True)
    (repo / ".harness" / "redis" / "appendonly.aof").write_text("state")
    # Then `git status` is clean
    assert _git(repo, "status", "--porcelain") == ""
