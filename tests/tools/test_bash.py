from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.tools import ShellPolicy, ToolContext, ToolOutcome, ToolRegistry, default_registry
from harness.tools.sandbox import bwrap_binary, sandbox_mode
from tests.waiting import wait_until

from .conftest import Call, host_processes, unique_sleep

# The registry fixture runs bash in the default (auto) sandbox: bwrap, else Landlock.
pytestmark = pytest.mark.skipif(
    sandbox_mode("auto") == "unavailable", reason=f"no sandbox can run ({bwrap_binary()})"
)


def test_bash_returns_output_and_exit_code(call: Call) -> None:
    outcome = call("bash", command="echo out; echo err >&2")

    assert outcome == ToolOutcome("out\nerr\n\n[exit code 0]")


def test_bash_nonzero_exit_is_an_error_with_the_output(call: Call) -> None:
    outcome = call("bash", command="echo failing; exit 3")

    assert outcome == ToolOutcome("failing\n\n[exit code 3]", is_error=True)


def test_bash_runs_in_the_workspace_with_stdin_closed(call: Call, tmp_path: Path) -> None:
    outcome = call("bash", command="pwd; cat")

    assert outcome.content == f"{tmp_path.resolve()}\n\n[exit code 0]"


def test_bash_keeps_the_last_2000_lines(call: Call) -> None:
    outcome = call("bash", command="seq 1 5000")

    note, *lines = outcome.content.removesuffix("\n\n[exit code 0]").splitlines()
    assert note.startswith("[output cut: showing the last 2000 of 5000 lines")
    assert lines == [str(i) for i in range(3001, 5001)]


def test_bash_keeps_the_last_50_kb(call: Call) -> None:
    outcome = call("bash", command="for i in $(seq 1 1000); do printf '%099d\\n' $i; done")

    note, *lines = outcome.content.removesuffix("\n\n[exit code 0]").splitlines()
    assert note.startswith("[output cut: showing the last 512 of 1000 lines")
    assert lines[-1] == f"{1000:099d}"
    assert len("\n".join(lines).encode()) <= 50 * 1024


def test_bash_is_refused_when_the_context_disallows_shell(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    outcome = registry.execute("bash", {"command": "touch ran"}, ToolContext(tmp_path))

    assert outcome.is_error
    assert "bash tool is disabled" in outcome.content
    assert not (tmp_path / "ran").exists()


def test_bash_timeout_kills_the_command_and_its_child(call: Call) -> None:
    sleep = unique_sleep()

    outcome = call("bash", command=f"{sleep} & wait", timeout=1)

    assert outcome.is_error
    assert "timed out after 1 s; the command and its children were killed" in outcome.content
    wait_until(lambda: not host_processes(sleep), f"{sleep!r} to be killed")


def test_bash_background_process_is_killed_when_the_command_returns(call: Call) -> None:
    sleep = unique_sleep()

    outcome = call("bash", command=f"{sleep} & echo started")

    assert outcome.content == "started\n\n[exit code 0]"
    wait_until(lambda: not host_processes(sleep), f"{sleep!r} to be killed")


def test_bash_cancel_kills_the_command_and_its_child(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    cancel = threading.Event()
    ctx = ToolContext(tmp_path, cancel=cancel, allow_shell=True)
    outcomes: list[ToolOutcome] = []
    sleep = unique_sleep()
    arguments = {"command": f"{sleep} & echo $! > child.pid; wait", "timeout": 120}
    caller = threading.Thread(
        target=lambda: outcomes.append(registry.execute("bash", arguments, ctx))
    )
    caller.start()
    pid_file = tmp_path / "child.pid"
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), "the child's pid")

    cancel.set()
    caller.join(30)

    assert len(outcomes) == 1 and outcomes[0].is_error
    assert "cancelled; the command and its children were killed" in outcomes[0].content
    wait_until(lambda: not host_processes(sleep), f"{sleep!r} to be killed")


def test_bash_passes_only_allowlisted_environment_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EXAMPLE_API_KEY", "sk-secret")
    monkeypatch.setenv("EXAMPLE_GREETING", "hello")
    monkeypatch.setenv("EXAMPLE_OTHER", "other")
    policy = ShellPolicy(env_names=("EXAMPLE_GREETING",))
    registry = default_registry(allow_shell=True, shell_policy=policy)

    outcome = registry.execute(
        "bash",
        {"command": 'echo "${EXAMPLE_API_KEY:-hidden} ${EXAMPLE_OTHER:-hidden} $EXAMPLE_GREETING"'},
        ToolContext(tmp_path, allow_shell=True),
    )

    assert outcome.content == "hidden hidden hello\n\n[exit code 0]"


def test_bash_timeout_above_the_maximum_is_refused(call: Call) -> None:
    outcome = call("bash", command="true", timeout=601)

    assert outcome.is_error
    assert "- timeout: Input should be less than or equal to 600" in outcome.content


def test_bash_reports_a_command_killed_by_a_signal(call: Call) -> None:
    outcome = call("bash", command="echo before; kill -KILL $$")

    assert outcome == ToolOutcome("before\n\n[exit code 137: killed by SIGKILL]", is_error=True)


def test_bash_keeps_the_end_of_one_huge_line(call: Call) -> None:
    outcome = call("bash", command="head -c 100000 /dev/zero | tr '\\0' a; echo -n b")

    note, line = outcome.content.removesuffix("\n\n[exit code 0]").split("\n")
    assert note == "[output cut: showing the last 1 of 1 lines (50.0 KB of 97.7 KB)]"
    assert line == "a" * (50 * 1024 - 1) + "b"
