"""The OS sandbox of the processes that import `workspace/functions` (the function host, the
validator, the write/edit load check): the one place that wraps their command, and that
decides whether functions may run at all.

Such a process holds no credential (`environment.function_environment`), but it runs as the
fleet's user: only the sandbox keeps it from reading the Redis password in the project's
`.env`, the state folder or the executor's `/proc/<pid>/environ`. So it gets the bash tool's
sandbox (`harness.tools.sandbox`, same probes, same rules from `harness.tools.sandbox_rules`)
plus, read-only, this interpreter, its environment and the `harness` and `channels` packages
(not the project folder that holds them):

- bubblewrap: the bash tool's mounts (its own PID namespace, so no other process's `/proc`),
  plus read-only binds of those folders;
- Landlock: the bash tool's ruleset, seccomp filter and supervisor (`landlock_run.py`), plus
  those folders readable and executable; no `/proc` at all, and Landlock refuses ptrace-mode
  access to processes outside the sandbox. Python starts through `sandbox_start.py`, which
  finds the two packages without listing their parent folder, and `TMPDIR` is
  `<workspace>/.home/tmp`.

`SIDECAR_SANDBOX=auto` uses bubblewrap where it runs, else Landlock; where neither runs (or
Landlock could not hide a non-empty private folder of the workspace) functions do not run at
all (`refusal` says why), unless `SIDECAR_SANDBOX=off` says so on purpose. `bwrap` and
`landlock` insist on one. Functions get the network the agent's shell gets
(`AGENT_SHELL_NETWORK`): they are the agent's code as its commands are, and a function must
not be a way around a shell without network. The processes themselves need none (their wire
is a pipe; the trusted executor holds the bus).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigurationError
from harness.settings import Settings
from harness.sidecar.environment import python_command
from harness.tools.sandbox import (
    SandboxMode,
    SandboxSetting,
    bwrap_arguments,
    bwrap_binary,
    describe_confinement,
    landlock_tmp,
    sandbox_mode,
    sandbox_unavailable_reason,
)
from harness.tools.sandbox_rules import landlock_command, landlock_spec, private_folder_in_use

log = logging.getLogger("harness.sidecar")
_START = Path(__file__).with_name("sandbox_start.py")
_PACKAGES = ("harness", "channels")
"""The packages a function process imports, by name: found, not imported (importing
`channels` loads every plug-in, which `harness functions` and `doctor` need not pay for)."""


@dataclass(frozen=True)
class FunctionSandbox:
    """How the function processes are confined: `setting` is `SIDECAR_SANDBOX`, `network`
    is `AGENT_SHELL_NETWORK`. Immutable."""

    setting: SandboxSetting = "off"
    network: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> FunctionSandbox:
        """The sandbox the settings ask for."""
        return cls(settings.sidecar_sandbox, settings.agent_shell_network)

    def mode(self) -> SandboxMode:
        """The mode in force here (probing bwrap and Landlock once per process)."""
        return sandbox_mode(self.setting, self.network)


def refusal(sandbox: FunctionSandbox, workspace: Path) -> str | None:
    """Why functions cannot run here under `sandbox`, as one line, or None when they can.
    Never raises."""
    mode = sandbox.mode()
    if mode == "unavailable":
        reason = sandbox_unavailable_reason(sandbox.setting, sandbox.network)
        return (
            f"no OS sandbox can run here ({reason}); set SIDECAR_SANDBOX=off to run the "
            "agent's functions unconfined on purpose"
        )
    if mode == "landlock":
        private = private_folder_in_use(workspace.resolve())
        if private is not None:
            return (
                f"the workspace's private folder {private}/ is not empty, and the Landlock "
                "sandbox cannot hide a folder inside the workspace (start the agent once: it "
                "moves that folder to the state folder)"
            )
    return None


def describe_function_sandbox(sandbox: FunctionSandbox) -> str:
    """One line saying what confines the agent's functions, for the sidecar's log and doctor."""
    mode = sandbox.mode()
    if mode == "off":
        return (
            "sidecar sandbox: off (SIDECAR_SANDBOX=off); functions see the host, the Redis "
            "password in .env and the state folder included"
        )
    if mode == "unavailable":
        reason = sandbox_unavailable_reason(sandbox.setting, sandbox.network)
        return f"sidecar sandbox: unavailable, functions do not run ({reason})"
    return f"sidecar sandbox: {describe_confinement(mode, sandbox.setting, sandbox.network)}"


def confined_python(
    module: str, args: list[str], workspace: Path, sandbox: FunctionSandbox
) -> list[str]:
    """The command that runs `python -m module args`, a process that imports code from
    `workspace`, in `sandbox` (see the module docstring). Raises `ConfigurationError` with
    `refusal`'s reason when functions cannot run here: never unconfined unless `off`."""
    if sandbox.setting == "off":
        return python_command(module, *args)
    root = workspace.resolve()
    why = refusal(sandbox, root)
    if why is not None:
        raise ConfigurationError(f"the agent's functions cannot run: {why}")
    if sandbox.mode() == "landlock":
        return _landlock_python(module, args, root, sandbox.network)
    return _bwrap_python(python_command(module, *args), root, sandbox.network)


def _bwrap_python(argv: list[str], root: Path, network: bool) -> list[str]:
    binary = bwrap_binary()
    assert binary is not None  # the mode said bwrap
    args = _without_missing_covers(bwrap_arguments(root, network))
    for path in _python_paths():
        args += ["--ro-bind", path, path]
    return [binary, *args, "--", *argv]


def _landlock_python(module: str, args: list[str], root: Path, network: bool) -> list[str]:
    spec = landlock_spec([str(root)], network=network, read_exec=_python_paths())
    start = {
        "packages": {name: _folder(name) for name in _PACKAGES},
        "env": {"TMPDIR": str(landlock_tmp(root))},
    }
    python = [sys.executable, "-I", "-u", str(_START), json.dumps(start), "--", module, *args]
    return landlock_command(spec, python)


def _without_missing_covers(args: list[str]) -> list[str]:
    """Drop `--tmpfs` covers of workspace folders that do not exist: bwrap would create them in
    the workspace (a `.harness` there would look like runtime state in the wrong place)."""
    kept: list[str] = []
    pairs = iter(args)
    for arg in pairs:
        if arg == "--tmpfs":
            target = next(pairs)
            if target == "/tmp" or Path(target).exists():
                kept += [arg, target]
        else:
            kept.append(arg)
    return kept


@functools.cache
def _python_paths() -> tuple[str, ...]:
    """This interpreter, its environment, and the harness's packages (not their folder)."""
    paths = {sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent)}
    paths |= {_folder(package) for package in _PACKAGES}
    return tuple(sorted(p for p in paths if Path(p).exists()))


def _folder(package: str) -> str:
    """The folder of the installed top-level `package`, found without importing it."""
    spec = importlib.util.find_spec(package)
    return str(Path((spec.origin if spec else None) or "").resolve().parent)
