"""Running fleets, per user: how the CLI finds `harness up` from any folder.

`harness up` writes one record per workspace to
`$XDG_STATE_HOME/harness/fleets/<hash of the resolved workspace>.json` (default
`~/.local/state/harness/fleets/`, mode 0600: it holds the Redis URL with its password) and
removes it on exit (`harness.fleet.supervision`, which reads its `pid` without the model). A
record whose process is gone (after a crash or kill -9) is stale: readers ignore it and
delete it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

from harness.state_dir import write_private


class FleetRecord(BaseModel):
    """One running `harness up`: its workspace and state folder (absolute), the Redis URL its
    processes use, the supervisor's pid and the web port, and the folder it runs in (whose
    `.env` its processes read; empty in records written before it was recorded)."""

    workspace: str
    state_dir: str
    redis_url: str
    pid: int
    port: int
    folder: str = ""


def fleets_dir() -> Path:
    """`$XDG_STATE_HOME/harness/fleets`, else `~/.local/state/harness/fleets`."""
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".local" / "state"
    return root / "harness" / "fleets"


def record_path(workspace: Path) -> Path:
    """The record file of the fleet serving `workspace` (resolved first)."""
    key = hashlib.sha256(str(workspace.expanduser().resolve()).encode()).hexdigest()[:16]
    return fleets_dir() / f"{key}.json"


def publish(record: FleetRecord) -> Path:
    """Write `record` (mode 0600), replacing any record for its workspace. Returns the path."""
    path = record_path(Path(record.workspace))
    write_private(path, record.model_dump_json() + "\n")
    return path


def find(workspace: Path) -> FleetRecord | None:
    """The live fleet serving `workspace`, or None (a stale record is deleted)."""
    return _live(record_path(workspace))


def running() -> list[FleetRecord]:
    """Every live fleet of this user, by workspace; stale records are deleted. Never raises."""
    try:
        paths = sorted(fleets_dir().glob("*.json"))
    except OSError:
        return []
    return [record for path in paths if (record := _live(path)) is not None]


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _live(path: Path) -> FleetRecord | None:
    record = _read(path)
    if record is None:
        return None
    if not pid_alive(record.pid):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return None
    return record


def _read(path: Path) -> FleetRecord | None:
    try:
        return FleetRecord.model_validate_json(path.read_text())
    except (OSError, ValidationError):
        return None
