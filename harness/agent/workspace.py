"""The agent's workspace folder: created from the template, with the shipped skills mirrored in.

Layout after `ensure_workspace`:

    workspace/
        SOUL.md, USER.md, MEMORY.md, ...   copied from the template once, then the user's
        functions/                         durable functions the sidecar loads
        memory/YYYY-MM-DD.md               daily logs (see `harness.agent.memory`)
        memory/history/                    earlier versions of MEMORY.md and held-back
                                           distillations (see `harness.agent.memory_history`)
        memory/.distilled.json             how far each log is distilled (`harness.agent.distill`)
        skills/*.md                        the user's own skills
        skills/shipped/*.md                a mirror of the repository's `skills/`, rewritten on
                                           every call: edits there are lost, so a user who wants
                                           to change a shipped skill copies it to `skills/`

Conversation logs (`sessions/`) and per-chat memory are not here: they live in the private
state folder, outside the tools' reach (`harness.agent.deps.private_folder`).

The shipped skills are mirrored (not referenced in place) because the file tools are confined
to the workspace, and the skills index must name paths the `read` tool can open.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from harness.tools.files import atomic_write

logger = logging.getLogger(__name__)

SUBFOLDERS = ("memory", "skills", "functions")
SHIPPED_SKILLS_DIR = Path("skills") / "shipped"
_SKIPPED_PARTS = frozenset({"__pycache__", ".git"})


def default_template() -> Path:
    """Return the repository's `workspace/` folder, the template for new workspaces.

    Located relative to this package (`Path(__file__).resolve().parents[2]`), so it exists in
    a source checkout or an editable install. A wheel ships only the Python packages, so there
    the folder may be missing; `ensure_workspace` then logs a warning and copies nothing.
    """
    return Path(__file__).resolve().parents[2] / "workspace"


def default_shipped_skills() -> Path:
    """Return the repository's `skills/` folder (the shipped skills); same caveat as
    `default_template`."""
    return Path(__file__).resolve().parents[2] / "skills"


def ensure_workspace(workspace: Path, template: Path, shipped_skills: Path) -> None:
    """Create or complete `workspace`. Idempotent and safe to run from several processes at once.

    - Creates the folder and its `memory/`, `skills/` and `functions/` subfolders.
    - Copies every template file that is missing from the workspace, keeping relative paths.
      An existing file is never overwritten, even if it differs from (or is empty unlike) the
      template: once copied, these files belong to the user.
    - Mirrors `shipped_skills/*.md` into `skills/shipped/`, replacing changed copies and
      removing copies whose source is gone. That folder belongs to the harness, not the user.

    A missing `template` or `shipped_skills` folder is logged and treated as empty.
    Raises OSError if the workspace cannot be written.
    """
    workspace.mkdir(parents=True, exist_ok=True)
    for name in SUBFOLDERS:
        (workspace / name).mkdir(exist_ok=True)
    _copy_missing(template, workspace)
    _mirror_skills(shipped_skills, workspace / SHIPPED_SKILLS_DIR)


def _copy_missing(template: Path, workspace: Path) -> None:
    if not template.is_dir():
        logger.warning("workspace template %s does not exist; nothing copied", template)
        return
    for source in sorted(template.rglob("*")):
        relative = source.relative_to(template)
        if not source.is_file() or _SKIPPED_PARTS.intersection(relative.parts):
            continue
        target = workspace / relative
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        _create_exclusively(target, source.read_bytes())
        logger.info("copied %s into the workspace", relative.as_posix())


def _create_exclusively(target: Path, data: bytes) -> None:
    """Write `data` to `target` only if it does not exist, never exposing a partial file.

    The content goes to a temporary file that is then hard-linked into place: `os.link`
    fails if the target exists, so a concurrent creator (or the user) always wins.
    """
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    temp.write_bytes(data)
    try:
        os.link(temp, target)
    except FileExistsError:
        pass
    finally:
        temp.unlink()


def _mirror_skills(source: Path, mirror: Path) -> None:
    mirror.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        logger.warning("shipped skills folder %s does not exist; no skills mirrored", source)
        wanted: dict[str, bytes] = {}
    else:
        wanted = {p.name: p.read_bytes() for p in sorted(source.glob("*.md")) if p.is_file()}
    for name, data in wanted.items():
        target = mirror / name
        try:
            if target.read_bytes() == data:
                continue
        except FileNotFoundError:
            pass
        atomic_write(target, data)
    for stale in mirror.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink(missing_ok=True)
