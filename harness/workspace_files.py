"""Fleet-side opens of workspace files that no link can lead out of the workspace.

Everything under the workspace is untrusted data written by the agent, links included: with
`IDENTITY.md -> ../.env` a plain `read_text` puts the operator's secrets into the system
prompt, and with `memory/<today>.md -> <venv>/zz.pth` a plain append writes code the fleet
runs. Every process of the fleet (web, worker, scheduler, sidecar supervisor, CLI) opens a
workspace file through this module instead.

The contract, for every function here:

- `root` is a folder the operator chose (the workspace, or a memory root in the state
  folder). It is trusted as given, links in its own path included.
- `relative` is a path below `root`: no absolute path, no `..`. Each of its components is
  opened with `O_NOFOLLOW` relative to the descriptor of the folder before it (`dir_fd=`),
  so a symbolic link anywhere below `root` is refused, whether it points out of the
  workspace or inside it. (Following only the links that stay inside would mean resolving
  them ourselves, component by component; nothing the fleet reads needs a link, so none is
  followed.) The check is the open itself: no link can be swapped in between a check and a
  use.
- A regular file with more than one hard link is refused for reading and appending (a link
  to a file outside the workspace looks like any other file); a write-replace puts a new file
  in place, so it never writes through one.
- A refusal raises `UnsafePathError`, an `OSError`: callers that treat an unreadable file as
  absent keep doing so, and callers that must say why (a tool error, a skipped prompt file)
  catch it by name.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from harness.errors import HarnessError
from harness.file_writes import wrote

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePathError(HarnessError, OSError):
    """A path below a trusted folder passes through a symbolic link, names a file with several
    hard links, or is not a plain path below the folder (absolute, or with `..`)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ELOOP, message)

    def __str__(self) -> str:
        return str(self.strerror)


def parts_of(relative: str | os.PathLike[str]) -> tuple[str, ...]:
    """The components of `relative` (`.` and empty ones dropped). Raises `UnsafePathError`
    for an absolute path or one with `..`."""
    text = os.fspath(relative)
    if text.startswith("/"):
        raise UnsafePathError(f"{text!r} is not a path relative to the workspace")
    # what PurePosixPath(text).parts gives, without building one: this runs for every open
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if ".." in parts:
        raise UnsafePathError(f"{text!r} goes up with '..'; only paths below it can be used")
    return parts


def relative_in(root: Path, path: Path) -> PurePosixPath:
    """`path` (absolute, as the fleet computed it from `root`) relative to `root`, lexically:
    no link is resolved. Raises `UnsafePathError` when it is not below `root`."""
    try:
        relative = PurePosixPath(Path(os.path.normpath(path)).relative_to(root).as_posix())
    except ValueError:
        raise UnsafePathError(f"{path} is not inside {root}") from None
    parts_of(relative)
    return relative


@contextlib.contextmanager
def folder_fd(
    root: Path, relative: str | os.PathLike[str] = "", *, create: bool = False
) -> Iterator[int]:
    """A descriptor of the folder `root/relative`, reached without following a link; closed on
    exit. With `create`, missing folders are made (`mkdir -p`). Raises `UnsafePathError` for a
    link, `FileNotFoundError` / `NotADirectoryError` as the OS says."""
    fd = _walk(root, parts_of(relative), create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_fd(
    root: Path,
    relative: str | os.PathLike[str],
    flags: int,
    mode: int = 0o644,
    *,
    create_parents: bool = False,
) -> int:
    """`os.open(root/relative, flags | O_NOFOLLOW)` without following a link on the way; the
    caller closes the descriptor. A regular file with several hard links is refused. With
    `create_parents`, missing folders are made first."""
    *folders, name = parts_of(relative) or ("",)
    if not name:
        raise UnsafePathError(f"{os.fspath(relative)!r} names no file")
    parent = _walk(root, tuple(folders), create=create_parents)
    try:
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
        except OSError as exc:
            _raise_if_link(exc, parent, name, root, relative)
            raise
        try:
            _refuse_hard_links(os.fstat(fd), root, relative)
        except BaseException:
            os.close(fd)
            raise
        return fd
    finally:
        os.close(parent)


def read_bytes(root: Path, relative: str | os.PathLike[str]) -> bytes:
    """The content of the regular file `root/relative`. Raises `UnsafePathError`,
    `FileNotFoundError`, `IsADirectoryError` and other `OSError`s."""
    fd = open_fd(root, relative, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{os.fspath(relative)} is not a regular file")
        return handle.read()


def read_text(root: Path, relative: str | os.PathLike[str]) -> str:
    """`read_bytes` decoded as UTF-8, undecodable bytes replaced."""
    return read_bytes(root, relative).decode("utf-8", errors="replace")


def read_optional_text(root: Path, relative: str | os.PathLike[str], what: str = "file") -> str:
    """The stripped text of an optional file (a prompt file, a memory log): "" when it is
    missing or not a file, and "" with one warning when it is refused (a link or a hard link:
    never followed). Other `OSError`s propagate."""
    try:
        return read_text(root, relative).strip()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return ""
    except UnsafePathError as exc:
        log.warning("%s %s skipped: %s", what, os.fspath(relative), exc)
        return ""


def write_replace(root: Path, relative: str | os.PathLike[str], data: bytes) -> None:
    """Replace `root/relative` with a new file holding `data`, atomically (a temporary file in
    the same folder, fsynced, renamed over it): a link at that name is replaced, never written
    through. Parent folders are made as needed; an existing file keeps its permission bits."""
    *folders, name = parts_of(relative) or ("",)
    if not name:
        raise UnsafePathError(f"{os.fspath(relative)!r} names no file")
    with folder_fd(root, "/".join(folders), create=True) as parent:
        try:
            old = os.stat(name, dir_fd=parent, follow_symlinks=False)
            mode: int | None = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
        except FileNotFoundError:
            mode = None
        temp = f".{name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=parent
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
    wrote(root.joinpath(*folders, name))


def create_exclusively(root: Path, relative: str | os.PathLike[str], data: bytes) -> bool:
    """Create `root/relative` holding `data` only if nothing (not even a link) has that name,
    never exposing a partial file (a temporary file hard-linked into place). True when it was
    created. Parent folders are made as needed."""
    *folders, name = parts_of(relative) or ("",)
    if not name:
        raise UnsafePathError(f"{os.fspath(relative)!r} names no file")
    with folder_fd(root, "/".join(folders), create=True) as parent:
        temp = f".{name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=parent
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.link(temp, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
    wrote(root.joinpath(*folders, name))
    return True


def make_folders(root: Path, relative: str | os.PathLike[str]) -> None:
    """`mkdir -p root/relative` without following a link; an existing link is refused."""
    with folder_fd(root, relative, create=True):
        pass


def entries(root: Path, relative: str | os.PathLike[str] = "") -> list[tuple[str, str]]:
    """The entries of folder `root/relative`, sorted by name, as (name, kind) with kind one of
    "file" (regular), "folder", "link" or "other", none followed. [] when the folder is
    missing or not a folder; a link on the way raises `UnsafePathError`."""
    try:
        with folder_fd(root, relative) as fd, os.scandir(fd) as found:
            listed = [(e.name, _kind(e)) for e in found]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(listed)


def files_in(root: Path, relative: str | os.PathLike[str] = "") -> list[str]:
    """The names of the regular files in folder `root/relative`, sorted; links are left out
    (with one warning each). [] when the folder is missing."""
    found = entries(root, relative)
    for name, kind in found:
        if kind == "link":
            shown = PurePosixPath(os.fspath(relative), name).as_posix()
            log.warning("%s skipped: it is a symbolic link, which the fleet never follows", shown)
    return [name for name, kind in found if kind == "file"]


def lstat(root: Path, relative: str | os.PathLike[str]) -> os.stat_result | None:
    """The status of `root/relative` itself (a link is not followed), reached without following
    a link; None when it does not exist. Raises `UnsafePathError` for a link on the way."""
    *folders, name = parts_of(relative) or ("",)
    try:
        with folder_fd(root, "/".join(folders)) as parent:
            if not name:
                return os.fstat(parent)
            return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def unlink(root: Path, relative: str | os.PathLike[str]) -> None:
    """Remove the file (or link) `root/relative`; nothing when it does not exist."""
    *folders, name = parts_of(relative) or ("",)
    try:
        with folder_fd(root, "/".join(folders)) as parent:
            os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        return
    wrote(root.joinpath(*folders, name))


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_file(follow_symlinks=False):
        return "file"
    if entry.is_dir(follow_symlinks=False):
        return "folder"
    return "other"


def _walk(root: Path, folders: tuple[str, ...], *, create: bool) -> int:
    """A descriptor of `root/folders...`, each folder opened with `O_NOFOLLOW` from the one
    before (`root` itself as given: it is the operator's, and made when `create`)."""
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for index, name in enumerate(folders):
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=fd)
        try:
            inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            try:
                _raise_if_link(exc, fd, name, root, "/".join(folders[: index + 1]))
            finally:
                os.close(fd)
            raise
        os.close(fd)
        fd = inner
    return fd


def _raise_if_link(
    exc: OSError, parent: int, name: str, root: Path, relative: str | os.PathLike[str]
) -> None:
    """Turn the OS's answer to opening a link with `O_NOFOLLOW` (ELOOP, or ENOTDIR for a folder
    expected) into `UnsafePathError`."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
        return
    try:
        is_link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return
    if is_link:
        shown = PurePosixPath(os.fspath(relative)).as_posix()
        raise UnsafePathError(
            f"{shown} is or passes through a symbolic link under {root}; the fleet never "
            "follows links in the workspace"
        ) from None


def _refuse_hard_links(info: os.stat_result, root: Path, relative: str | os.PathLike[str]) -> None:
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        shown = PurePosixPath(os.fspath(relative)).as_posix()
        raise UnsafePathError(
            f"{shown} under {root} has {info.st_nlink} hard links; a file linked from outside "
            "the workspace looks like any other, so no file with several hard links is used"
        )
