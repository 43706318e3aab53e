"""The sandbox mode in force: bubblewrap, else Landlock; bash is refused where no sandbox
runs, unless it is off."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from harness.tools import ShellPolicy, ToolContext, ToolOutcome, default_registry
from harness.tools.sandbox import describe_sandbox, landlock_abi, sandbox_mode

LANDLOCK_ABI = landlock_abi()


@pytest.mark.parametrize("setting", ["auto", "bwrap"])
def test_bash_is_disabled_when_the_sandbox_cannot_run(
    broken_bwrap: Path, no_landlock: None, tmp_path: Path, setting: Literal["auto", "bwrap"]
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


def test_auto_says_why_both_sandboxes_fail(broken_bwrap: Path, no_landlock: None) -> None:
    line = describe_sandbox(ShellPolicy("auto"))

    assert "No permissions to create new namespace" in line
    assert "the kernel has no Landlock" in line


def test_landlock_setting_is_refused_without_landlock(no_landlock: None, tmp_path: Path) -> None:
    registry = default_registry(allow_shell=True, shell_policy=ShellPolicy("landlock"))

    outcome = registry.execute(
        "bash", {"command": "touch ran"}, ToolContext(tmp_path, allow_shell=True)
    )

    assert outcome.is_error
    assert "no OS sandbox can run here (the kernel has no Landlock" in outcome.content
    assert not (tmp_path / "ran").exists()


def test_landlock_without_tcp_rules_cannot_turn_the_network_off(landlock_abi_3: None) -> None:
    assert sandbox_mode("landlock", network=False) == "unavailable"
    line = describe_sandbox(ShellPolicy("landlock", network=False))
    assert "ABI 3 cannot turn the network off" in line


@pytest.mark.skipif(LANDLOCK_ABI < 1, reason="the kernel has no Landlock")
def test_auto_falls_back_to_landlock_when_bwrap_cannot_run(
    broken_bwrap: Path, tmp_path: Path
) -> None:
    registry = default_registry(allow_shell=True, shell_policy=ShellPolicy("auto"))

    outcome = registry.execute(
        "bash",
        {"command": "touch ran && cat /proc/1/environ"},
        ToolContext(tmp_path, allow_shell=True),
    )

    assert "cat: /proc/1/environ: Permission denied" in outcome.content
    assert (tmp_path / "ran").exists()
    line = describe_sandbox(ShellPolicy("auto"))
    assert line.startswith(f"bash sandbox: landlock (ABI {LANDLOCK_ABI}, no PID namespace")
    assert "bwrap cannot run" in line and "No permissions to create new namespace" in line
