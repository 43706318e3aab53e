"""File helpers shared by the file tools: binary sniffing, strict text reads, atomic writes."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from harness.tools.errors import ToolError

SNIFF_BYTES = 8192


def looks_binary(sample: bytes) -> bool:
    """Return True if `sample` (a file's first bytes) holds a NUL byte, as binary files do."""
    return b"\0" in sample


def read_text_file(path: Path, shown: str) -> str:
    """Return the UTF-8 text of the file at `path`; `shown` names it in error messages.

    Raises `ToolError` if the file is missing, is a directory, is binary or is not UTF-8.
    """
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file; use ls to list it")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(f"file not found: {shown}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from exc
    if looks_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"{shown} is a binary file ({len(data)} bytes); only text can be used")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"{exc.reason} at byte {exc.start}"
        raise ToolError(f"{shown} is not valid UTF-8 text ({reason})") from None


def atomic_write(path: Path, data: bytes) -> None:
    """Replace the content of `path` with `data` so readers see the old or the new file, never half.

    Writes a temporary file in the same folder, fsyncs it and renames it over `path`. An existing
    file keeps its permission bits; a new one gets the usual umask-derived mode. Parent folders
    must exist. On failure the temporary file is removed and `path` is unchanged.
    """
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
