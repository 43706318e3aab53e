"""The Landlock sandbox's supervisor: `python -I landlock_run.py SPEC -- ARGV...`.

Started by the bash tool (as a file, not as `-m`, so that it imports only the standard library
and landlockpy and starts in tens of milliseconds). SPEC is a JSON object (see `Spec`). The
supervisor

1. becomes a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the command starts,
   `setsid` and double-forked daemons included, is re-parented to it when its parent dies, and
   asks for SIGTERM if its own parent (the worker) dies;
2. forks; the child drops every capability for good when it runs as root (bounding set,
   securebits `NOROOT` locked, `capset` to nothing), restricts itself with a Landlock ruleset
   built from SPEC (file system always; TCP bind/connect when `no_tcp`; signals and abstract
   Unix sockets scoped to the sandbox where the kernel has ABI 6), adds a seccomp filter that
   refuses creating sockets Landlock cannot police (Unix sockets before ABI 9, which could
   reach a daemon's socket outside the sandbox; with `no_tcp`, every IP and packet socket, so
   UDP too), and execs ARGV;
3. waits for that child, then SIGKILLs and reaps every process left under it (found in `/proc`
   by parent pid, again and again until none is left), and exits with the child's status
   (128 + N when a signal N killed it). SIGTERM, SIGINT or SIGHUP make it do the same at once.

The supervisor itself is not confined: it must read `/proc` to find what to kill. Its
environment is the sandbox's allowlisted one. Errors before the exec are printed on stderr as
`landlock: ...` and end with exit code 126.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import sys
import time
from typing import Any, TypedDict

from landlockpy import AccessFS, AccessNet, Ruleset, Scope, abi_version, fs_for_abi

__all__ = ["Spec", "abi_version", "drop_capabilities", "kill_descendants", "restrict", "supervise"]

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_SET_CHILD_SUBREAPER = 36
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
# NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each with its lock; KEEP_CAPS locked off
_SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
_CAPABILITY_VERSION_3 = 0x20080522
_EXEC_FAILED = 126
_PYTHON_IGNORES = (signal.SIGPIPE, signal.SIGXFSZ)

READ_EXEC = AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE
READ_ONLY = AccessFS.READ_FILE | AccessFS.READ_DIR
DEVICE = AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.IOCTL_DEV
WRITABLE = ~(AccessFS.MAKE_CHAR | AccessFS.MAKE_BLOCK) & fs_for_abi(64)


class Spec(TypedDict):
    """What the command may reach. Paths must exist; those that do not are skipped.

    `read_exec`: hierarchies readable and executable (system folders, or entries of one);
    `read_only`: files or hierarchies readable only (e.g. the conversation's transcript);
    `devices`: device files readable and writable (`/dev/null`, ...); `writable`: hierarchies
    with every right (the workspace); `no_tcp`: refuse TCP bind and connect (needs ABI 4).
    """

    read_exec: list[str]
    read_only: list[str]
    devices: list[str]
    writable: list[str]
    no_tcp: bool


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(libc: Any, option: int, value: int) -> int:
    result = int(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0))
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl({option}, {value}): {os.strerror(code)}")
    return result


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities(libc: Any) -> None:
    """Give up every capability for this process and whatever it execs (for root)."""
    _prctl(libc, _PR_SET_SECUREBITS, _SECUREBITS)
    for cap in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0:
            if ctypes.get_errno() == errno.EINVAL:  # past the kernel's last capability
                break
            raise OSError(ctypes.get_errno(), f"cannot drop capability {cap}")
    _prctl(libc, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def restrict(spec: Spec) -> int:
    """Restrict the calling process with Landlock as `spec` says; return the ABI used."""
    abi = abi_version()
    if abi < 1:
        raise OSError(errno.ENOSYS, "the kernel has no Landlock")
    if spec["no_tcp"] and abi < 4:
        raise OSError(errno.ENOSYS, f"Landlock ABI {abi} cannot restrict TCP (needs 4)")
    handled_net = AccessNet.BIND_TCP | AccessNet.CONNECT_TCP if spec["no_tcp"] else AccessNet(0)
    scoped = Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET
    with Ruleset(handled_fs=fs_for_abi(abi), handled_net=handled_net, scoped=scoped) as rules:
        grants = [
            (spec["read_exec"], READ_EXEC),
            (spec["read_only"], READ_ONLY),
            (spec["devices"], DEVICE),
            (spec["writable"], WRITABLE),
        ]
        for paths, access in grants:
            for path in paths:
                try:
                    rules.allow_path(path, access if os.path.isdir(path) else _file(access))
                except FileNotFoundError:
                    continue
        rules.restrict()
    return abi


def _file(access: AccessFS) -> AccessFS:
    """The rights of `access` that Landlock accepts on a file (not a folder)."""
    return access & (
        AccessFS.EXECUTE
        | AccessFS.WRITE_FILE
        | AccessFS.READ_FILE
        | AccessFS.TRUNCATE
        | AccessFS.IOCTL_DEV
    )


_AF_UNIX, _AF_INET, _AF_INET6, _AF_PACKET = 1, 2, 10, 17
_RESOLVE_UNIX_ABI = 9
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_EACCES = 0x7FFF0000, 0x00050000 | errno.EACCES
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_X32_BIT = 0x40000000
_ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
"""Machine: (its AUDIT_ARCH value, the number of `socket`)."""


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def socket_filter(families: list[int], machine: str) -> list[tuple[int, int, int, int]]:
    """A classic-BPF seccomp program refusing `socket(family, ...)` for `families` with EACCES,
    and every system call of another ABI (x32, i386 on x86_64), which could bypass it."""
    arch, socket_nr = _ARCHES[machine]
    allow, deny = 6 + len(families), 7 + len(families)
    program = [
        (_LD_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ, 0, deny - 2, arch),
        (_LD_ABS, 0, 0, 0),  # seccomp_data.nr
        (_JGE, deny - 4, 0, _X32_BIT),
        (_JEQ, 0, allow - 5, socket_nr),
        (_LD_ABS, 0, 0, 16),  # the low half of seccomp_data.args[0], the family
    ]
    for index, family in enumerate(families):
        here = 6 + index
        program.append((_JEQ, deny - here - 1, 0, family))
    program += [(_RET, 0, 0, _RET_ALLOW), (_RET, 0, 0, _RET_EACCES)]
    return program


def refuse_sockets(libc: Any, families: list[int]) -> None:
    """Install `socket_filter(families)` for this process and what it execs (needs
    no_new_privs, which Landlock's restrict set). Raises OSError on an unknown machine."""
    machine = os.uname().machine
    if machine not in _ARCHES:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {machine}")
    program = socket_filter(families, machine)
    filters = (_SockFilter * len(program))(*[_SockFilter(*op) for op in program])
    fprog = _SockFprog(len(program), filters)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")


def refused_families(abi: int, no_tcp: bool) -> list[int]:
    """The socket families to refuse under Landlock ABI `abi` (see the module docstring)."""
    families = [_AF_UNIX] if abi < _RESOLVE_UNIX_ABI else []
    return families + ([_AF_INET, _AF_INET6, _AF_PACKET] if no_tcp else [])


def children(parent: int) -> list[int]:
    """Pids of the live processes whose parent is `parent` (read from `/proc/*/stat`)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


def kill_descendants() -> None:
    """SIGKILL and reap every process under this one until none is left. As a subreaper this
    process inherits each orphan, so killing children over and over reaches them all."""
    me = os.getpid()
    while True:
        for pid in children(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return  # nothing left to wait for
        time.sleep(0.005)  # let the killed ones die (and orphans reach us) before looking again


def _status(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def _exec_confined(spec: Spec, argv: list[str]) -> None:
    """In the forked child: drop capabilities, restrict, exec. Never returns."""
    try:
        # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across exec
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, *_PYTHON_IGNORES):
            signal.signal(number, signal.SIG_DFL)
        libc = _libc()
        if os.geteuid() == 0:
            drop_capabilities(libc)
        abi = restrict(spec)
        families = refused_families(abi, spec["no_tcp"])
        if families:
            refuse_sockets(libc, families)
        os.execvp(argv[0], argv)
    except Exception as exc:
        os.write(2, f"landlock: {exc}\n".encode(errors="replace"))
    finally:
        os._exit(_EXEC_FAILED)


def supervise(spec: Spec, argv: list[str]) -> int:
    """Run `argv` confined by `spec` as described in the module docstring; return its status."""
    libc = _libc()
    _prctl(libc, _PR_SET_CHILD_SUBREAPER, 1)
    _prctl(libc, _PR_SET_PDEATHSIG, signal.SIGTERM)

    def stop(number: int, _frame: object) -> None:
        kill_descendants()
        os._exit(128 + number)

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, stop)
    if os.getppid() == 1:  # the worker died before PDEATHSIG was set
        return 128 + signal.SIGTERM
    child = os.fork()
    if child == 0:
        _exec_confined(spec, argv)
    status = 0
    while True:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            status = _status(wait_status)
            break
    kill_descendants()
    return status


def main(args: list[str]) -> int:
    """Entry point: `SPEC -- ARGV...`."""
    if len(args) < 3 or args[1] != "--":
        os.write(2, b"landlock: usage: landlock_run.py SPEC -- ARGV...\n")
        return 2
    spec: Spec = json.loads(args[0])
    return supervise(spec, args[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
