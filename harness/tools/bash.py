"""The `bash` tool: one shell command in the workspace, its whole process group bounded.

The command runs in a new session (`start_new_session=True`), so it and everything it starts
share a process group that is killed as a unit (SIGTERM, then SIGKILL) when the call times
out, is cancelled, or returns while background processes still run. A process that detaches
itself (`setsid`, daemonising) leaves the group and is out of reach.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import time
from typing import IO

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.output import TailBuffer

MAX_TIMEOUT = 600
_POLL_SECONDS = 0.05
_DRAIN_SECONDS = 0.25
_TERM_GRACE_SECONDS = 2.0
# Environment variables a model-driven shell should not see. Not a security boundary: the
# shell can still read any file the worker can.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|^REDIS_URL$", re.IGNORECASE)


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
    `ToolError`s that still carry the output. Disabled unless `ctx.allow_shell`. Processes
    left running in the background are killed when the command returns.
    """

    name = "bash"
    description = (
        "Run a shell command with bash in the workspace and return its output (stdout and stderr "
        "together, last 2000 lines / 50 KB) and exit code. No stdin. Background processes are "
        "killed when the command returns. Prefer read/ls/find/grep for looking at files."
    )
    parameters = BashParams
    timeout = float(MAX_TIMEOUT)

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
        try:
            process = subprocess.Popen(
                ["bash", "-c", params.command],
                cwd=ctx.workspace,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)},
            )
        except OSError as exc:
            raise ToolError(f"cannot start bash: {exc}") from exc
        assert process.stdout is not None
        tail = TailBuffer()
        try:
            stopped = _pump(process, process.stdout, tail, params.timeout, ctx)
        finally:
            _kill_group(process)
            process.wait()
            process.stdout.close()
        output = tail.render() or "(no output)"
        if stopped:
            raise ToolError(f"{output}\n\n[{stopped}; the command and its children were killed]")
        if process.returncode < 0:
            raise ToolError(f"{output}\n\n[killed by {_signal_name(-process.returncode)}]")
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


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
