"""The function host: the only sidecar process that imports `workspace/functions`, and it holds
no credential (no Redis URL or password, no token: see `environment.function_environment`).

Started by the executor (`python -m harness.sidecar.host <folder>`) inside the OS sandbox,
working in the functions folder. It keeps its stdin and stdout for the wire (`wire.py`) and
points file descriptor 1 at stderr, so a `print` in a function lands in the log, not on the
wire. In order: limit its resources, wait for `Load` (a warm host waits here), import the
folder, send `Loaded`, then run each `Execute` in a thread of its own until stdin ends (the
executor is gone), when it exits at once.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import BinaryIO

from harness.observe.json_logs import configure_logging
from harness.runtime.functions import Function
from harness.sidecar.environment import apply_limits
from harness.sidecar.host_context import HostContext, HostExecution, HostInterrupted, outcome
from harness.sidecar.loader import load_folder
from harness.sidecar.wire import (
    TO_HOST,
    Call,
    Cancel,
    Execute,
    Fault,
    Load,
    Loaded,
    Outcome,
    encode,
)

log = logging.getLogger("harness.sidecar.host")


class Host:
    """The host's state: the loaded functions, the executions in flight, the wire's writer."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = threading.Lock()
        self.functions: dict[str, Function] = {}
        self.executions: dict[str, HostExecution] = {}

    def send(self, message: Call | Outcome | Loaded) -> None:
        """Write one message; safe from any thread."""
        with self._lock:
            self._out.write(encode(message))
            self._out.flush()

    def load(self, folder: Path, order: Load) -> None:
        """Import the folder and report what it declares."""
        skip = {error.file: error for error in order.skip}
        loaded = load_folder(folder, reserved=set(order.reserved), skip=skip)
        self.functions = {fn.id: fn for fn in loaded.functions}
        specs = [fn.spec for fn in loaded.functions]
        self.send(
            Loaded(
                report=loaded.report, specs=specs, files=loaded.files,
                declarations=loaded.declarations,
            )
        )  # fmt: skip

    def start(self, order: Execute) -> None:
        """Run one execution's handler in a thread of its own."""
        execution = HostExecution(order.exec, self.send, order.attempt)
        self.executions[order.exec] = execution
        threading.Thread(
            target=self._run, args=(execution, order), name=f"exec-{order.exec}", daemon=True
        ).start()

    def _run(self, execution: HostExecution, order: Execute) -> None:
        try:
            fn = self.functions.get(order.function_id)
            if fn is None:
                missing = Fault(
                    type="FunctionNotFoundError",
                    message=f"function {order.function_id!r} is not loaded in this host",
                )
                self.send(Outcome(exec=execution.id, final=True, fault=missing))
                return
            ctx = HostContext(execution, order.event, order.run_id, fn.id, log)
            handler = fn.handler
            self.send(outcome(execution.id, lambda: handler(ctx), final=True))  # type: ignore[arg-type]
        except HostInterrupted:
            pass  # the executor has moved on; it expects nothing more of this execution
        finally:
            self.executions.pop(execution.id, None)

    def dispatch(self, line: bytes) -> None:
        """Act on one line from the executor."""
        message = TO_HOST.validate_json(line)
        if isinstance(message, Execute):
            self.start(message)
        elif isinstance(message, Load):
            raise RuntimeError("a second Load")
        else:
            execution = self.executions.get(message.exec)
            if execution is None:
                return  # an execution that has ended meanwhile
            if isinstance(message, Cancel):
                execution.cancelled.set()
            else:
                execution.inbox.put(message)


def _wire() -> tuple[BinaryIO, BinaryIO]:
    """The wire's ends (the original stdin and stdout); fd 0 becomes /dev/null and fd 1 a copy
    of stderr, for the agent's code."""
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def main(argv: list[str] | None = None) -> int:
    """Entry point of the host process."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else ".").resolve()
    apply_limits(
        int(os.environ.get("SIDECAR_MEMORY_MB", "0")),
        int(os.environ.get("SIDECAR_CPU_SECONDS", "0")),
    )
    configure_logging(os.environ.get("LOG_LEVEL", "INFO"), os.environ.get("LOG_FORMAT", "text"))
    wire_in, wire_out = _wire()
    host = Host(wire_out)
    first = wire_in.readline()  # a warm host waits here
    if not first:
        return 0
    order = TO_HOST.validate_json(first)
    if not isinstance(order, Load):
        log.error("the executor's first message was not Load")
        return 2
    host.load(folder, order)
    while line := wire_in.readline():
        host.dispatch(line)
    os._exit(0)  # the executor is gone: so are the runs; threads may still be in user code


if __name__ == "__main__":
    raise SystemExit(main())
