"""Validating `functions/` in a fresh interpreter, with a timeout: the check the sidecar runs
before every reload and the agent's write and edit tools run after touching a function file.

`python -m harness.sidecar.validate <folder>` reads one JSON request from stdin (reserved ids,
files to skip), loads the folder (see `loader`) and prints, on lines starting with `MARK`, each
file it starts and then the report. `Validator` runs it: a file whose import does not finish
in time, or that kills the interpreter, is blamed (it was the last one started), recorded as
an error and skipped on a new attempt, so one bad file never hides the report of the others.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Collection, Mapping
from pathlib import Path

from harness.runtime.function_sources import LoadError
from harness.sidecar.environment import apply_limits
from harness.sidecar.loader import LoadReport, function_files, load_folder
from harness.sidecar.sandbox import FunctionSandbox, confined_python

MARK = "@@harness-sidecar "
UNCONFINED = FunctionSandbox("off")
MODULE = "harness.sidecar.validate"


class Validator:
    """Validates one folder, again and again. `prepare()` starts the interpreter for the next
    validation in advance, waiting on its stdin, so that validation costs the import of the
    files, not of the harness; none is kept waiting otherwise (an idle one holds 40-60 MB)."""

    def __init__(
        self, folder: Path, env: Mapping[str, str], *, sandbox: FunctionSandbox = UNCONFINED
    ) -> None:
        self.folder = folder.resolve()
        self.env = dict(env)
        self.sandbox = sandbox
        self._spare: subprocess.Popen[bytes] | None = None

    def validate(self, reserved: Collection[str] = (), timeout: float = 15.0) -> LoadReport:
        """Load the folder in a fresh interpreter and return its report. Never raises for
        anything the files do; each attempt is bounded by `timeout` seconds. Raises
        `ConfigurationError` when the sandbox refuses to run functions here."""
        skip: dict[str, LoadError] = {}
        for _ in range(len(function_files(self.folder)[0]) + 1):
            out, code = self._attempt(reserved, skip, timeout)
            report = _report(out)
            if report is not None:
                return report
            started = _started(out)
            if not started or started[-1] in skip:
                break
            if code is None:
                error = (
                    f"importing it took longer than {timeout:g}s: an endless loop or a "
                    "blocking call at import time? Do the work inside the handler instead"
                )
            else:
                error = f"the interpreter died while importing it (exit code {code})"
            skip[started[-1]] = LoadError(file=started[-1], error=error)
        return LoadReport()

    def prepare(self) -> None:
        """Start the interpreter of the next validation now, unless one is waiting already
        (the supervisor calls it when a file changes, so it warms during the debounce)."""
        if not self.waiting:
            self._spare = self._spawn()

    @property
    def waiting(self) -> bool:
        """Whether an interpreter started by `prepare` waits for its request."""
        return self._spare is not None and self._spare.poll() is None

    def close(self) -> None:
        """Stop the waiting interpreter, if any."""
        if self._spare is not None:
            _kill(self._spare)
            self._spare = None

    def _spawn(self) -> subprocess.Popen[bytes]:
        argv = confined_python(MODULE, [str(self.folder)], self.folder.parent, self.sandbox)
        return subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.PIPE,
            env=self.env, cwd=self.folder, start_new_session=True,
        )  # fmt: skip

    def _attempt(
        self, reserved: Collection[str], skip: dict[str, LoadError], timeout: float
    ) -> tuple[str, int | None]:
        proc, self._spare = self._spare, None
        if proc is None or proc.poll() is not None:
            proc = self._spawn()
        request = json.dumps({"reserved": sorted(reserved), "skip": encode_skip(skip)}) + "\n"
        try:
            out, _ = proc.communicate(request.encode(), timeout=timeout)
            return out.decode(errors="replace"), proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, _ = proc.communicate()
            return out.decode(errors="replace"), None


def validate(
    folder: Path,
    *,
    env: Mapping[str, str],
    reserved: Collection[str] = (),
    timeout: float = 15.0,
    sandbox: FunctionSandbox = UNCONFINED,
) -> LoadReport:
    """Load `folder` in a new interpreter (environment `env`, OS sandbox `sandbox`) and return
    its report. Never raises for anything the files do; each attempt is bounded by `timeout`
    seconds. Raises `ConfigurationError` when the sandbox refuses to run functions here."""
    return Validator(folder, env, sandbox=sandbox).validate(reserved, timeout)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def encode_skip(skip: Mapping[str, LoadError]) -> str:
    """Files not to import, with the error to report for each, as one JSON text."""
    return json.dumps([error.model_dump(mode="json") for error in skip.values()])


def decode_skip(text: str) -> dict[str, LoadError]:
    """The inverse of `encode_skip`."""
    errors = [LoadError.model_validate(item) for item in json.loads(text or "[]")]
    return {error.file: error for error in errors}


def _lines(out: str) -> list[dict[str, object]]:
    found = []
    for line in out.splitlines():
        if line.startswith(MARK):
            found.append(json.loads(line[len(MARK) :]))
    return found


def _report(out: str) -> LoadReport | None:
    for item in _lines(out):
        if "report" in item:
            return LoadReport.model_validate(item["report"])
    return None


def _started(out: str) -> list[str]:
    return [str(item["start"]) for item in _lines(out) if "start" in item]


def _emit(item: dict[str, object]) -> None:
    print(MARK + json.dumps(item), flush=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the validating interpreter."""
    parser = argparse.ArgumentParser(prog=MODULE)
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    memory, cpu = os.environ.get("SIDECAR_MEMORY_MB", "0"), os.environ.get("SIDECAR_CPU_SECONDS")
    apply_limits(int(memory), int(cpu or "0"))
    line = sys.stdin.readline()  # a warm interpreter waits here for its request
    if not line.strip():
        return 0
    request = json.loads(line)
    loaded = load_folder(
        args.folder,
        reserved=set(request["reserved"]),
        skip=decode_skip(request["skip"]),
        on_start=lambda name: _emit({"start": name}),
    )
    _emit({"report": loaded.report.model_dump(mode="json")})
    sys.stdout.flush()
    os._exit(0)  # the report is out: skip the interpreter's slow tidy-up, which the caller awaits


if __name__ == "__main__":
    raise SystemExit(main())
