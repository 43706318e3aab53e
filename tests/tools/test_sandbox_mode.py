"""The sandbox mode in force: bash is refused where no sandbox runs, unless it is off."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import pytest

from harness.tools import ShellPolicy, ToolContext, ToolOutcome, default_registry
from harness.tools.sandbox import describe_sandbox


@pytest.fixture
def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `bwrap` first on PATH that fails as it does where user namespaces are off."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return fake


@pytest.mark.parametrize("setting", ["auto", "bwrap"])
def test_bash_is_disabled_when_the_sandbox_cannot_run(
    broken_bwrap: Path, tmp_path: Path, setting: Literal["auto", "bwrap"]
) -> None:
    registry = default_registry(allow_shell=True, shell_policy=ShellPolicy(setting))

    outcome = registry.execute(
        "bash", {"command": "touch ran"}, ToolContext(tmp_path, allow_shell=True)
    )

    assert outcome.is_error
    assert "the bash tool is disabled: no OS sandbox can run here" in outcome.content
    assert "No permissions to create new namespace" in outcome.content
    assert not (tmp_path / "ran").exists()
    assert describe_sandbox(ShellPolicy(setting)).startswith("bash sandbox: unavailable")


def test_bash_runs_unconfined_when_the_sandbox_is_off_on_purpose(
    broken_bwrap: Path, tmp_path: Path
) -> None:
    registry = default_registry(allow_shell=True, shell_policy=ShellPolicy("off"))

    outcome = registry.execute(
        "bash", {"command": "echo ran"}, ToolContext(tmp_path, allow_shell=True)
    )

    assert outcome == ToolOutcome("ran\n\n[exit code 0]")
    assert describe_sandbox(ShellPolicy("off")).startswith("bash sandbox: off")
