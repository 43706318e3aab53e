"""The bash tool's limits that need more than the sandbox's namespaces, through the real tool:
the process count (a pids cgroup per command) and CPU time (RLIMIT_CPU). Each probe runs in
every sandbox mode this machine supports; the process-count probes skip, saying why, where no
pids cgroup is writable (there only the RLIMIT_NPROC backstop exists, which root ignores)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.tools import ShellPolicy
from harness.tools.pid_limit import PREFIX, process_bound
from harness.tools.sandbox import SandboxSetting, describe_sandbox
from tests.waiting import wait_until

from .conftest import detach, host_processes, run

LIMIT = 32
BOUND = process_bound()
needs_pids_cgroup = pytest.mark.skipif(
    BOUND.base is None, reason=f"no writable pids cgroup here: {BOUND.reason}"
)


def leftover_cgroups() -> list[Path]:
    """Per-command pids cgroups this test process made that still exist."""
    assert BOUND.base is not None
    return sorted(BOUND.base.glob(f"{PREFIX}{os.getpid()}-*"))


def start_many(sleep: str, count: int) -> str:
    """A command starting up to `count` `sleep` processes from Python (whose fork fails at
    once at the limit, where bash's retries for seconds), printing how many started."""
    script = (
        "import subprocess\n"
        "started = 0\n"
        "try:\n"
        f"    for _ in range({count}):\n"
        f"        subprocess.Popen({sleep.split()!r})\n"
        "        started += 1\n"
        "except OSError as exc:\n"
        "    print('refused:', exc)\n"
        "print('started', started)\n"
    )
    return f"python3 -c {_quoted(script)}"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _started(content: str) -> int:
    line = next(line for line in content.splitlines() if line.startswith("started "))
    return int(line.split()[1])


@needs_pids_cgroup
def test_sandbox_stops_a_process_loop_at_the_process_limit(
    tmp_path: Path, survivor: str, mode: SandboxSetting
) -> None:
    # Given a process limit of LIMIT per command
    policy = ShellPolicy(mode, max_processes=LIMIT)

    # When the command tries to start three times as many sleeping processes
    outcome = run(tmp_path, start_many(survivor, 3 * LIMIT), policy)

    # Then fork is refused before the limit, counting the command's own processes
    assert "refused: [Errno 11] Resource temporarily unavailable" in outcome.content, (
        f"expected fork to be refused at {LIMIT} processes, got {outcome.content!r}"
    )
    assert _started(outcome.content) < LIMIT
    # And nothing the command started outlives the call, nor does its cgroup
    wait_until(lambda: not host_processes(survivor), f"{survivor!r} to be gone after the call")
    assert leftover_cgroups() == []


@needs_pids_cgroup
def test_sandbox_holds_a_shell_fork_loop_at_the_limit_until_the_timeout(
    tmp_path: Path, survivor: str, mode: SandboxSetting
) -> None:
    # Given a process limit, and a shell loop forking sleeps in the background (a fork bomb
    # with a bound of its own, so that a broken limit cannot take the machine down)
    policy = ShellPolicy(mode, max_processes=LIMIT)
    command = f"for i in $(seq {3 * LIMIT}); do {survivor} & done; wait"

    # When it runs until the call's timeout
    outcome = run(tmp_path, command, policy, timeout=3)

    # Then bash saw fork refused, and the timeout ended it
    assert "fork: retry: Resource temporarily unavailable" in outcome.content, outcome.content
    assert "timed out after 3 s" in outcome.content
    # And every process it started is gone, and its cgroup too
    wait_until(lambda: not host_processes(survivor), f"{survivor!r} to be gone after the call")
    assert leftover_cgroups() == []


@needs_pids_cgroup
def test_sandbox_off_still_kills_detached_processes_through_the_cgroup(
    tmp_path: Path, survivor: str
) -> None:
    # Given the sandbox off on purpose, where a setsid child leaves the process group
    policy = ShellPolicy("off", max_processes=LIMIT)

    # When a command detaches a sleep and returns
    outcome = run(tmp_path, f"{detach(survivor)}; echo started", policy)

    # Then the cgroup's cleanup kills it anyway
    assert outcome.content == "started\n\n[exit code 0]"
    wait_until(lambda: not host_processes(survivor), f"{survivor!r} to be gone after the call")
    assert leftover_cgroups() == []


@needs_pids_cgroup
def test_describe_sandbox_names_the_pids_cgroup(mode: SandboxSetting) -> None:
    line = describe_sandbox(ShellPolicy(mode, max_processes=LIMIT))

    assert f"processes <= {LIMIT} (pids cgroup under {BOUND.base})" in line


def test_describe_sandbox_says_when_only_the_rlimit_bounds_processes(
    mode: SandboxSetting,
) -> None:
    line = describe_sandbox(ShellPolicy(mode, max_processes=None))

    assert "processes: only RLIMIT_NPROC 1024 per uid, ignored for root" in line


def test_sandbox_kills_a_busy_loop_at_the_cpu_limit(tmp_path: Path, mode: SandboxSetting) -> None:
    # Given a CPU limit of 1 s per process, far below the call's 30 s timeout
    policy = ShellPolicy(mode, max_cpu_seconds=1)

    # When the command spins
    outcome = run(tmp_path, "while :; do :; done", policy, timeout=30)

    # Then the kernel stops it with SIGXCPU, not the wall clock
    assert "killed by SIGXCPU" in outcome.content, outcome.content
    assert "timed out" not in outcome.content


def test_sandbox_kills_a_python_busy_loop_at_the_cpu_limit(
    tmp_path: Path, mode: SandboxSetting
) -> None:
    # Given a CPU limit of 1 s per process (a Python process, which ignores no SIGXCPU)
    policy = ShellPolicy(mode, max_cpu_seconds=1)

    # When a Python loop spins, and the shell reports how it ended
    outcome = run(tmp_path, "python3 -c 'while True: pass'; echo status $?", policy)

    # Then it died of SIGXCPU (24), 128 + 24 to the shell, which said so and went on
    assert "CPU time limit exceeded" in outcome.content, outcome.content
    assert outcome.content.endswith("status 152\n\n[exit code 0]"), outcome.content
