"""Finding Redis: `REDIS_URL`, or the embedded server of a running `harness up`.

`resolve_redis_url` looks, in order:
1. `REDIS_URL`;
2. the state folder of the configured workspace (`AGENT_WORKSPACE`, or `--workspace PATH`),
   where `harness up` publishes its embedded Redis's URL, then this user's fleet record for
   that workspace (`harness.fleet.fleets`, which also knows a custom `HARNESS_STATE_DIR`);
3. when no workspace was named explicitly and exactly one fleet of this user is running
   (`harness.fleet.fleets.running`), that one, so the CLI works from any folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.credentials import register_url_password
from harness.errors import ConfigurationError, NoFleetFoundError
from harness.fleet import fleets
from harness.fleet.embedded_redis import OWNER_NAME
from harness.runtime.settings import EngineSettings
from harness.state_dir import redis_dir, redis_url_file, state_dir


def resolve_redis_url(settings: EngineSettings) -> str:
    """The Redis URL this process should use (see the module docstring for the order).

    Its password is registered for redaction in this process (the settings registered
    REDIS_URL's; one read from the state folder or a fleet record is registered here).
    Raises `ConfigurationError` with a one-line message saying where it looked
    (`NoFleetFoundError` when no fleet runs at all).
    """
    url = _find_redis_url(settings)
    register_url_password(url)
    return url


def _find_redis_url(settings: EngineSettings) -> str:
    if settings.redis_url:
        return settings.redis_url
    workspace = settings.agent_workspace.expanduser().resolve()
    state = state_dir(settings)
    url = _published_url(state)
    if url is not None:
        return url
    record = fleets.find(workspace)
    if record is not None:
        return record.redis_url
    others = fleets.running()
    explicit = bool(os.environ.get("AGENT_WORKSPACE", "").strip())
    if not explicit and len(others) == 1:
        return others[0].redis_url
    if len(others) > 1 and not explicit:
        choice = f"{len(others)} fleets are running ({', '.join(r.workspace for r in others)}): "
        hint = "pick one with --workspace PATH"
    else:
        choice = f"{len(others)} other fleet(s) running: " if others else "no fleet running: "
        hint = "start one with `harness up`, pass --workspace PATH, or set REDIS_URL"
    error = ConfigurationError if len(others) > 1 and not explicit else NoFleetFoundError
    raise error(
        f"no Redis found: REDIS_URL is unset, no embedded Redis for workspace {workspace} "
        f"(looked in {redis_url_file(state)} and {fleets.fleets_dir()}); {choice}{hint}"
    )


def _published_url(state: Path) -> str | None:
    """The URL in the state folder, when the process that published it still lives."""
    try:
        url = redis_url_file(state).read_text().strip()
    except OSError:
        return None
    try:
        owner = int((redis_dir(state) / OWNER_NAME).read_text().strip())
    except (OSError, ValueError):
        return url or None  # no owner recorded: trust the file, as before
    return url if url and fleets.pid_alive(owner) else None
