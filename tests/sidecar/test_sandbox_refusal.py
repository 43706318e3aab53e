"""Where no OS sandbox can confine the agent's functions, none runs: the sidecar idles, and
`harness functions`, doctor and the write/edit check say why, in one line each."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.commands.doctor import check_sidecar_sandbox
from harness.runtime import Runtime, event, set_runtime
from harness.runtime.function_sources import FILE_SOURCE, Origin, replace_source
from harness.runtime.functions import FunctionSpec
from harness.settings import Settings, get_settings
from harness.sidecar.supervisor import serve
from harness.sidecar.tool_check import check_file
from harness.tools.sandbox import landlock_abi
from tests.waiting import wait_until

WHY = ("No permissions to create new namespace", "the kernel has no Landlock")
# imported by anything that loads it: a marker that a process ran the agent's code
MARKER_FUNCTION = """
from pathlib import Path

Path(__file__).with_name("imported.txt").write_text("imported")
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with one function file that leaves a marker when imported."""
    functions = tmp_path / "workspace" / "functions"
    functions.mkdir(parents=True)
    (functions / "marker.py").write_text(MARKER_FUNCTION)
    return tmp_path / "workspace"


@pytest.fixture
def fleet_runtime(runtime: Runtime) -> Iterator[Runtime]:
    """The fakeredis runtime, as the process's runtime (as the sidecar and CLI find it)."""
    set_runtime(runtime)
    yield runtime
    set_runtime(None)


def _settings(workspace: Path, **values: object) -> Settings:
    return Settings(_env_file=None, agent_workspace=workspace, **values)  # type: ignore[call-arg]


def test_sidecar_without_any_sandbox_runs_no_function_and_says_why(
    broken_bwrap: Path,
    no_landlock: None,
    workspace: Path,
    fleet_runtime: Runtime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a function an earlier sidecar registered, and a machine where neither bubblewrap
    # nor Landlock can run, with SIDECAR_SANDBOX=auto
    spec = FunctionSpec(id="old", triggers=(event("app/x"),), queue="sidecar")
    replace_source(fleet_runtime, FILE_SOURCE, {"old": (spec, Origin(source=FILE_SOURCE))}, [])
    caplog.set_level(logging.INFO, logger="harness.sidecar")
    stop = threading.Event()

    # When the sidecar starts
    sidecar = threading.Thread(target=serve, args=(_settings(workspace), stop))
    sidecar.start()
    try:
        wait_until(
            lambda: "old" not in {s.id for s in fleet_runtime.triggers.specs()},
            "the earlier sidecar's function to be removed",
        )
    finally:
        stop.set()
        sidecar.join(timeout=30)

    # Then it removed the old functions, imported none of the files, and said why in one line
    assert not sidecar.is_alive()
    assert not (workspace / "functions" / "imported.txt").exists()
    lines = [r.getMessage() for r in caplog.records if "functions do not run" in r.getMessage()]
    assert len(lines) == 1, caplog.text
    assert all(part in lines[0] for part in (*WHY, "SIDECAR_SANDBOX=off")), lines[0]


def test_write_check_says_no_function_runs_without_a_sandbox(
    broken_bwrap: Path, no_landlock: None, workspace: Path
) -> None:
    # Given a machine where no sandbox runs
    path = workspace / "functions" / "marker.py"

    # When write/edit checks a function file
    verdict = check_file(path, _settings(workspace), reserved=set())

    # Then the agent is told why nothing runs, and the file was not imported to find out
    assert verdict.startswith("sidecar: NOT loaded: the sidecar runs no function"), verdict
    assert all(part in verdict for part in WHY), verdict
    assert not (workspace / "functions" / "imported.txt").exists()


def test_functions_command_and_doctor_say_why_no_function_runs(
    broken_bwrap: Path,
    no_landlock: None,
    workspace: Path,
    fleet_runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a machine where no sandbox runs, and the default SIDECAR_SANDBOX=auto
    monkeypatch.setenv("AGENT_WORKSPACE", str(workspace))
    monkeypatch.delenv("SIDECAR_SANDBOX", raising=False)
    get_settings.cache_clear()
    try:
        # When `harness functions` and doctor's check run
        shown = CliRunner().invoke(app, ["functions"])
        checks = check_sidecar_sandbox(get_settings())
    finally:
        get_settings.cache_clear()

    # Then both say functions do not run, and why
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert all(part in flat for part in ("functions do not run here:", *WHY)), shown.output
    assert [c.status for c in checks] == ["fail"]
    assert checks[0].detail.startswith("sidecar: functions do not run: no OS sandbox")
    assert "SIDECAR_SANDBOX=off" in (checks[0].fix or "")


@pytest.mark.skipif(landlock_abi() < 1, reason="the kernel has no Landlock")
def test_doctor_shows_the_landlock_fallback_and_an_unconfined_sidecar(
    broken_bwrap: Path, workspace: Path
) -> None:
    # Given bubblewrap broken on a kernel with Landlock
    # When doctor checks the sidecar's sandbox under auto, and under off
    auto = check_sidecar_sandbox(_settings(workspace))
    off = check_sidecar_sandbox(_settings(workspace, sidecar_sandbox="off"))

    # Then auto has fallen back to Landlock and says why; off is a warning
    assert auto[0].status == "ok"
    assert auto[0].detail.startswith(f"sidecar sandbox: landlock (ABI {landlock_abi()}"), auto
    assert "bwrap cannot run" in auto[0].detail
    assert off[0].status == "warn" and off[0].detail.startswith("sidecar sandbox: off")
