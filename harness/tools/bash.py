"""The `bash` tool: one shell command in the workspace, confined and bounded.

What the command can see and use is decided in `harness.tools.sandbox` (bubblewrap, rlimits,
environment allowlist); this module starts it, copies its output and stops it. The command
runs in a new session (`start_new_session=True`), so the sandbox's outer process leads a
process group that is killed as a unit (SIGTERM, then SIGKILL) when the call times out, is
cancelled, or returns while background processes still run. Under bwrap, killing that group
tears down the sandbox's PID namespace, so even `setsid` children die; under Landlock, the
supervisor leading the group is a child subreaper that kills every process left under it
when the command ends or it is told to stop. Where the machine offers a pids cgroup, every
process the command starts is also in the command's own cgroup, which is emptied (SIGKILL) and
removed once the command has been waited for: that catches detached processes in every mode,
`off` included (without a cgroup, a process that detaches itself with the sandbox off leaves
the group and is out of reach).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from typing import IO

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.output import TailBuffer
from harness.tools.sandbox import ShellPolicy, sandboxed

MAX_TIMEOUT = 600
_POLL_SECONDS = 0.05
_DRAIN_SECONDS = 0.25
_TERM_GRACE_SECONDS = 2.0


class BashParams(ToolParams):
    """Arguments of the bash tool."""

    command: str = Field(description="Shell command, run with `bash -c` in the workspace.")
    timeout: int = Field(
        default=60,
        ge=1,
        le=MAX_TIMEOUT,
        description=f"Seconds before the command is killed (at most {MAX_TIMEOUT}).",
    )


class BashTool(Tool[BashParams]):
    """Run `bash -c command` in the workspace; return its combined output and exit code.

    stdin is closed; stdout and stderr are merged; only the tail (last 2,000 lines / 50 KB) is
    kept, with a note on how much was cut. A non-zero exit, a timeout and a cancellation are
    `ToolError`s that still carry the output. Disabled unless `ctx.allow_shell`, and when
    `policy` asks for a sandbox that cannot run here. Processes left running in the background
    are killed when the command returns.
    """

    name = "bash"
    description = (
        "Run a shell command with bash in the workspace and return its output (stdout and stderr "
        "together, last 2000 lines / 50 KB) and exit code. No stdin. Background processes are "
        "killed when the command returns. Prefer read/ls/find/grep for looking at files."
    )
    parameters = BashParams
    timeout = float(MAX_TIMEOUT)

    def __init__(self, policy: ShellPolicy | None = None) -> None:
        self.policy = policy or ShellPolicy()

    def timeout_for(self, params: BashParams) -> float:
        """The registry's backstop: the command's own timeout plus time to kill it."""
        return params.timeout + _DRAIN_SECONDS + 2 * _TERM_GRACE_SECONDS + 5.0

    def run(self, params: BashParams, ctx: ToolContext) -> str:
        """Run the command; see the class docstring."""
        if not ctx.allow_shell:
            raise ToolError(
                "the bash tool is disabled for this agent; use read, write, edit, ls, find "
                "and grep instead"
            )
        if not ctx.workspace.is_dir():
            raise ToolError(f"the workspace {ctx.workspace} does not exist")
        command = sandboxed(
            params.command, ctx.workspace, self.policy, params.timeout, ctx.transcript
        )
        try:
            process = subprocess.Popen(
                command.argv,
                cwd=command.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=command.env,
                preexec_fn=command.preexec_fn,
            )
        except (OSError, subprocess.SubprocessError) as exc:  # the latter: preexec refused
            command.release()
            raise ToolError(f"cannot start bash: {exc}") from exc
        assert process.stdout is not None
        tail = TailBuffer()
        try:
            stopped = _pump(process, process.stdout, tail, params.timeout, ctx)
        finally:
            _kill_group(process)
            process.wait()
            command.release()
            process.stdout.close()
        output = tail.render() or "(no output)"
        if stopped:
            raise ToolError(f"{output}\n\n[{stopped}; the command and its children were killed]")
        if process.returncode < 0:
            raise ToolError(f"{output}\n\n[killed by {_signal_name(-process.returncode)}]")
        if process.returncode > 128 and _is_signal(process.returncode - 128):
            # bwrap (like a shell) reports a command killed by signal N as exit code 128 + N
            name = _signal_name(process.returncode - 128)
            raise ToolError(f"{output}\n\n[exit code {process.returncode}: killed by {name}]")
        if process.returncode != 0:
            raise ToolError(f"{output}\n\n[exit code {process.returncode}]")
        return f"{output}\n\n[exit code 0]"


def _pump(
    process: subprocess.Popen[bytes],
    stream: IO[bytes],
    tail: TailBuffer,
    timeout: int,
    ctx: ToolContext,
) -> str | None:
    """Copy output into `tail` until the shell exits and the pipe closes.

    Returns why the command was stopped early ("timed out after N s", "cancelled"), or None.
    After the shell exits, output is drained for a moment only: background processes may
    hold the pipe open indefinitely.
    """
    deadline = time.monotonic() + timeout
    drain_until: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        open_pipe = True
        while True:
            if open_pipe and selector.select(_POLL_SECONDS):
                chunk = os.read(stream.fileno(), 65536)
                if chunk:
                    tail.add(chunk)
                else:
                    open_pipe = False
                    selector.unregister(stream)
            elif not open_pipe:
                time.sleep(_POLL_SECONDS)
            now = time.monotonic()
            if process.poll() is not None:
                if not open_pipe:
                    return None
                drain_until = drain_until or now + _DRAIN_SECONDS
                if now >= drain_until:
                    return None
            if ctx.cancelled():
                return "cancelled"
            if now >= deadline:
                return f"timed out after {timeout} s"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the shell's process group, then SIGKILL whatever is left after a grace period."""
    pgid = process.pid  # the shell leads its own session, so its pid is the group id
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    give_up = time.monotonic() + _TERM_GRACE_SECONDS
    while time.monotonic() < give_up:
        process.poll()  # reap the shell: a zombie leader would keep the group alive
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(_POLL_SECONDS)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _is_signal(number: int) -> bool:
    return number in signal.valid_signals()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
