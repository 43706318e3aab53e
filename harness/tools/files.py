"""File helpers shared by the file tools: binary sniffing, strict text reads. (Atomic writes
that follow no link are `harness.workspace_files.write_replace`.)"""

from __future__ import annotations

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
