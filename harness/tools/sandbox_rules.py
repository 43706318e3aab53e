"""What an OS sandbox around agent-written code may see, and the one place that builds the
Landlock ruleset: for the bash tool's commands (`sandbox.py`) and for the sidecar's function
processes (`harness.sidecar.sandbox`), which differ only in what they add (`landlock_spec`'s
parameters).

The system folders (`SYSTEM_DIRS`) are readable, less the secrets in `/etc` (`ETC_SECRETS`,
`ETC_SECRET_GLOBS`, `ETC_SECRET_DIRS`: bubblewrap covers them, Landlock grants `/etc` entry by
entry without them when running as root, who could read them). The workspace's private
folders (`HIDDEN_FOLDERS`) are never visible: bubblewrap covers them with empty tmpfs;
Landlock cannot hide a folder inside a granted one, so a Landlock sandbox refuses to start
while one of them holds anything (`private_folder_in_use`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from glob import glob
from pathlib import Path

try:
    from harness.tools import landlock_run
except ImportError:  # landlockpy is a Linux-only dependency
    landlock_run = None  # type: ignore[assignment]

__all__ = [
    "ETC_SECRETS",
    "ETC_SECRET_DIRS",
    "ETC_SECRET_GLOBS",
    "HIDDEN_FOLDERS",
    "SYSTEM_DIRS",
    "landlock_command",
    "landlock_run",
    "landlock_spec",
    "private_folder_in_use",
]

HIDDEN_FOLDERS = ("sessions", ".harness", "memory/chats")
"""Workspace folders (relative, POSIX) no tool may see: chat transcripts, runtime state, and
per-chat memories (`AGENT_MEMORY_SCOPE=per-chat`)."""
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-")
ETC_SECRET_GLOBS = ("/etc/ssh/ssh_host_*key",)
ETC_SECRET_DIRS = ("/etc/ssl/private",)
_LANDLOCK_SYSTEM = (*SYSTEM_DIRS, "/opt")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


def landlock_spec(
    writable: Sequence[str],
    read_only: Sequence[str] = (),
    network: bool = True,
    read_exec: Sequence[str] = (),
) -> landlock_run.Spec:
    """What a Landlock-confined process may reach: the system folders (`/etc` less its secrets
    as root) readable and executable, plus `read_exec`; `/etc/resolv.conf`'s target and
    `read_only` readable; a few devices; `writable` with every right; and TCP only when
    `network`. Nothing else: no home, no project folder, no `/tmp`, no `/proc`."""
    system = [d for d in _LANDLOCK_SYSTEM if os.path.isdir(d)]
    if os.geteuid() == 0:  # root reads /etc/shadow and host keys: grant /etc less those
        system = [d for d in system if d != "/etc"] + _etc_without_secrets()
    readable = list(read_only)
    resolv = Path("/etc/resolv.conf")
    if resolv.is_symlink():
        readable.append(str(resolv.resolve()))
    return {
        "read_exec": system + list(read_exec),
        "read_only": readable,
        "devices": [d for d in _DEVICES if os.path.exists(d)],
        "writable": list(writable),
        "no_tcp": not network,
    }


def landlock_command(spec: landlock_run.Spec, argv: Sequence[str]) -> list[str]:
    """The command that runs `argv` confined by `spec` under the Landlock supervisor
    (`landlock_run.py`, which also adds its seccomp filter and kills what is left at the end).
    Needs landlockpy (check `sandbox.sandbox_mode` first)."""
    assert landlock_run is not None, "landlockpy is not installed"
    return [sys.executable, "-I", landlock_run.__file__, json.dumps(spec), "--", *argv]


def private_folder_in_use(workspace: Path) -> str | None:
    """The first of the workspace's `HIDDEN_FOLDERS` that holds anything (which a Landlock
    sandbox could not hide), or None."""
    for name in HIDDEN_FOLDERS:
        folder = workspace / name
        if folder.is_dir() and any(folder.iterdir()):
            return name
    return None


def _etc_without_secrets() -> list[str]:
    """Every entry of `/etc` (one level down into folders holding secrets) but the secrets."""
    secrets = {*ETC_SECRETS, *(p for g in ETC_SECRET_GLOBS for p in glob(g))}
    secrets.update(ETC_SECRET_DIRS)
    parents = {os.path.dirname(p) for p in secrets} - {"/etc"}
    entries: list[str] = []
    for folder in ["/etc", *sorted(parents)]:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if path not in secrets and path not in parents:
                entries.append(path)
    return entries
