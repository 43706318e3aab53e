"""The runtime's own files, kept beside the workspace rather than in it.

The agent's file tools and shell see only the workspace, so the embedded Redis (whose
append-only file holds every conversation), its password and its URL live in a state folder
outside it: `HARNESS_STATE_DIR`, default `<HARNESS_SHARED_ROOT>/state` when a shared root is
set, else `<workspace parent>/.harness` (`./.harness` for the default `./workspace`). Layout:

    <state>/redis/            the embedded Redis: append-only file, redis.log, owner.pid
    <state>/redis/url         its URL, password included (mode 0600) while it runs
    <state>/redis/password    its password, generated at first start (mode 0600)
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from harness.redaction import register_secret

if TYPE_CHECKING:  # only annotated: importing the engine here would be a cycle at import
    from harness.runtime.settings import EngineSettings

log = logging.getLogger(__name__)

_LEGACY = Path(".harness") / "redis"  # under the workspace, before the state folder existed


def state_dir(settings: EngineSettings) -> Path:
    """The absolute state folder for these settings (not created): HARNESS_STATE_DIR, else
    `<HARNESS_SHARED_ROOT>/state`, else `.harness` beside the workspace."""
    configured = settings.harness_state_dir
    if configured is not None:
        return configured.expanduser().resolve()
    if settings.harness_shared_root is not None:
        return settings.harness_shared_root.expanduser().resolve() / "state"
    return settings.agent_workspace.expanduser().resolve().parent / ".harness"


def redis_dir(state: Path) -> Path:
    """Where the embedded Redis keeps its data and log."""
    return state / "redis"


def redis_url_file(state: Path) -> Path:
    """Where a running embedded Redis publishes its URL, so sibling processes can find it."""
    return redis_dir(state) / "url"


def migrate_legacy_redis(workspace: Path, state: Path) -> bool:
    """Move `<workspace>/.harness/redis` to `redis_dir(state)` when the old one exists and the
    new one does not, logging one line. Returns True when it moved something. Raises `OSError`
    when the move fails."""
    old, new = workspace.expanduser().resolve() / _LEGACY, redis_dir(state)
    if not old.is_dir() or new.exists():
        return False
    new.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(old), str(new))
    (new / "url").unlink(missing_ok=True)  # it named a server that is gone
    try:
        old.parent.rmdir()  # `<workspace>/.harness`, when nothing else was in it
    except OSError:
        pass
    log.warning("moved the embedded Redis data from %s to %s (outside the workspace)", old, new)
    return True


PRIVATE_MODE = 0o600


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text`, readable by this user only (0600, whatever the umask and
    whatever mode an old file had) from the first byte, making its folder if need be.
    Atomic: written to a temporary file beside it, then renamed over it, so a reader sees
    the old text or the new one, never half of it (a fleet record, a `.env`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), PRIVATE_MODE)
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def redis_password(state: Path) -> str:
    """The embedded Redis password kept in the state folder, generated (`secrets.token_urlsafe`)
    and saved with mode 0600 on first use, and registered for redaction in this process.
    Idempotent."""
    path = redis_dir(state) / "password"
    try:
        password = path.read_text().strip()
    except FileNotFoundError:
        password = ""
    if not password:
        password = secrets.token_urlsafe(32)
        write_private(path, password + "\n")
    register_secret(password)
    return password
