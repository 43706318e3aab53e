"""Which settings a command run outside the fleet's folder reads: the running fleet's.

`harness up` records the folder it runs in (`FleetRecord.folder`), whose `.env` its processes
read. A command run from another folder (`harness doctor`, `chat`, `mcp list`, ...) that finds
a running fleet (the one serving the configured workspace, else the only one running when no
workspace was named, as `harness.runtime.connection` finds its Redis) reads that fleet's
`.env` instead of this folder's (`read_dotenv_in`), with relative paths counted from there,
and talks about that fleet's workspace. So it sees what the fleet sees (issue 32: `doctor`
reported "no ANTHROPIC_API_KEY" from another folder while the fleet answered). Variables set
in the environment still win, as they do over any `.env`.

The commands that run fleet processes or write this folder's `.env` (`SERVES_THIS_FOLDER`)
never follow: they are about this folder. Nor does a folder whose own `.env` names its Redis
(`REDIS_URL`, `REDIS_SENTINELS`): it is configured for a fleet of its own. A workspace named
in this folder's `.env` counts as named, as one in the environment does: only the fleet
serving it is followed.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import ConfigurationError
from harness.fleet import fleets
from harness.fleet.fleets import FleetRecord
from harness.settings import get_settings
from harness.settings_errors import read_dotenv_in

SERVES_THIS_FOLDER = frozenset(
    {"up", "worker", "scheduler", "gateway", "web", "sidecar", "poll", "init"}
)
OWN_REDIS = frozenset({"REDIS_URL", "REDIS_SENTINELS"})
"""Settings that, named in this folder's `.env`, tie it to a fleet of its own."""


def _named_in_dotenv(path: Path) -> set[str]:
    """The variables `path` gives a non-empty value (upper case); empty when it is missing
    or unreadable."""
    if not path.is_file():
        return set()
    from dotenv import dotenv_values  # pydantic-settings' own reader, loaded with it

    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError):
        return set()
    return {name.upper() for name, value in values.items() if value and value.strip()}


def serving_fleet(workspace: Path | None, *, explicit: bool) -> FleetRecord | None:
    """The live fleet serving `workspace`, else (unless the workspace was named `explicit`ly)
    the only live fleet of this user; None when there is none or several. Never raises."""
    if workspace is not None:
        record = fleets.find(workspace)
        if record is not None:
            return record
    if explicit:
        return None
    others = fleets.running()
    return others[0] if len(others) == 1 else None


def follow_running_fleet(command: str | None) -> FleetRecord | None:
    """Make this process read the settings of the fleet `command` will talk to, when that
    fleet runs in another folder; returns its record, or None when this folder's settings
    stay (no such fleet, a fleet recorded without its folder, one running here, or a command
    of `SERVES_THIS_FOLDER`). Sets AGENT_WORKSPACE to the fleet's workspace unless it was
    set, and clears the settings cache. A bad value in this folder's `.env` does not stop
    the search: the fleet's settings replace it."""
    if command is None or command in SERVES_THIS_FOLDER:
        return None
    named_here = _named_in_dotenv(Path.cwd() / ".env")
    if named_here & OWN_REDIS:
        return None
    explicit = bool(os.environ.get("AGENT_WORKSPACE", "").strip()) or (
        "AGENT_WORKSPACE" in named_here
    )
    try:
        workspace: Path | None = get_settings().agent_workspace.expanduser().resolve()
    except ConfigurationError:
        workspace = None
    record = serving_fleet(workspace, explicit=explicit)
    if record is None or not record.folder or Path(record.folder) == Path.cwd().resolve():
        return None
    read_dotenv_in(Path(record.folder))
    if not explicit:
        os.environ["AGENT_WORKSPACE"] = record.workspace
    get_settings.cache_clear()
    return record
