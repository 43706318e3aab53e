"""An idle sidecar holds only what runs the functions: its executor and that executor's host.

The interpreters of the next validation and the next executor start when a file changes (they
warm during the debounce) and are gone once the reload is done.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harness.fleet.process_tree import descendants
from tests.integration.sidecar_fleet import SidecarFleet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

FUNCTION = """
from harness.runtime import event, function


@function(id="idle-{version}", trigger=event("test/idle"))
def idle(ctx):
    return "{version}"
"""
SIDECAR_MODULES = ("harness.sidecar.executor", "harness.sidecar.host", "harness.sidecar.validate")


def _sidecar_processes(pid: int) -> Counter[str]:
    """How many processes below `pid` run each of the sidecar's modules."""
    found: Counter[str] = Counter()
    for proc in descendants(pid):
        try:
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        found.update(module for module in SIDECAR_MODULES if module in argv)
    return found


def _only_the_running_pair(fleet: SidecarFleet) -> bool:
    found = _sidecar_processes(fleet.procs["sidecar"].pid)
    return found == Counter({"harness.sidecar.executor": 1, "harness.sidecar.host": 1})


def test_idle_sidecar_keeps_no_spare_validator_or_executor(redis_url: str, tmp_path: Path) -> None:
    # Given a sidecar that loaded one function
    fleet = SidecarFleet(redis_url=redis_url, workspace=tmp_path / "ws")
    fleet.functions.mkdir(parents=True)
    fleet.write("idle.py", FUNCTION.format(version="v1"))
    fleet.start("sidecar", "sidecar")
    try:
        fleet.wait_registered("idle-v1")

        # Then, idle, it runs one executor and its host, and no validator
        wait_for(
            lambda: _only_the_running_pair(fleet),
            what="one executor and one host, no spare\n" + fleet.logs(),
        )

        # When a file changes, the reload still happens, and leaves the same pair
        fleet.write("idle.py", FUNCTION.format(version="v2"))
        fleet.wait_registered("idle-v2")
        wait_for(
            lambda: _only_the_running_pair(fleet),
            what="one executor and one host after the reload, no spare\n" + fleet.logs(),
        )
    finally:
        fleet.stop()
