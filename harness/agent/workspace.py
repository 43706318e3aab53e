"""The agent's workspace folder: created from the template, with the shipped skills mirrored in.

Layout after `ensure_workspace`:

    workspace/
        SOUL.md, USER.md, MEMORY.md, ...   copied from the template once, then the user's
        functions/                         durable functions the sidecar loads
        memory/YYYY-MM-DD.md               daily logs (see `harness.agent.memory.notes`)
        memory/history/                    earlier versions of MEMORY.md and held-back
                                           distillations (see `harness.agent.memory.history`)
        memory/.distilled.json             how far each log is distilled (`memory.distill`)
        skills/*.md                        the user's own skills
        skills/shipped/*.md                a mirror of the shipped skills, rewritten on
                                           every call: edits there are lost, so a user who wants
                                           to change a shipped skill copies it to `skills/`

Conversation logs (`sessions/`) and per-chat memory are not here: they live in the private
state folder, outside the tools' reach (`harness.agent.deps.private_folder`).

The shipped skills are mirrored (not referenced in place) because the file tools are confined
to the workspace, and the skills index must name paths the `read` tool can open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from harness.workspace_files import (
    UnsafePathError,
    create_exclusively,
    entries,
    lstat,
    make_folders,
    read_bytes,
    unlink,
    write_replace,
)

logger = logging.getLogger(__name__)

SUBFOLDERS = ("memory", "skills", "functions")
SHIPPED_SKILLS_DIR = Path("skills") / "shipped"
_SKIPPED_PARTS = frozenset({"__pycache__", ".git"})
_SHIPPED = "_shipped"  # inside the `harness` package of a wheel
_REPOSITORY = Path(__file__).resolve().parents[2]  # a clone's root, beside `harness/`


def default_template() -> Path:
    """Return the template for new workspaces, shipped in the package
    (`harness/_shipped/workspace`, in a clone as in a wheel). Never the repository's
    `workspace/`: that is a workspace, the fleet's to write."""
    return _packaged("workspace")


def default_shipped_skills() -> Path:
    """Return the shipped skills folder: the package's, else the repository's `skills/`."""
    return shipped_folder("skills")


def shipped_folder(name: str) -> Path:
    """Where the shipped folder `name` (`skills`; `workspace` see `default_template`) is read
    from.

    Both are found inside the package, at `harness/_shipped/<name>`, with
    `importlib.resources`: the workspace template always lives there (never in the workspace
    itself, which the fleet writes and git ignores), and a wheel maps the skills there too
    (pyproject's `force-include`). A clone or an editable install has no packaged skills: there
    the repository's top-level `skills/` is used, so an edit to a skill is live without a
    rebuild. Never raises; the path may not exist (`ensure_workspace` then
    logs a warning). A package imported from a zip archive is not supported: the fleet's
    processes need real files.
    """
    packaged = _packaged(name)
    if packaged.is_dir():
        return packaged
    return _REPOSITORY / name


def _packaged(name: str) -> Path:
    return Path(str(resources.files("harness").joinpath(_SHIPPED, name)))


def ensure_workspace(workspace: Path, template: Path, shipped_skills: Path) -> None:
    """Create or complete `workspace`. Idempotent and safe to run from several processes at once.

    - Creates the folder and its `memory/`, `skills/` and `functions/` subfolders.
    - Copies every template file that is missing from the workspace, keeping relative paths.
      An existing file is never overwritten, even if it differs from (or is empty unlike) the
      template: once copied, these files belong to the user.
    - Mirrors `shipped_skills/*.md` into `skills/shipped/`, replacing changed copies and
      removing copies whose source is gone. That folder belongs to the harness, not the user.

    A missing `template` or `shipped_skills` folder is logged and treated as empty. Nothing is
    written through a link in the workspace (`harness.workspace_files`): a file or folder
    that is one is left alone with a warning. Raises OSError if the workspace cannot be
    written.
    """
    workspace.mkdir(parents=True, exist_ok=True)
    for name in SUBFOLDERS:
        _guarded(name, make_folders, workspace, name)
    _copy_missing(template, workspace)
    _guarded(SHIPPED_SKILLS_DIR.as_posix(), _mirror_skills, shipped_skills, workspace)


def _guarded(shown: str, action: Callable[..., object], *args: Any) -> None:
    """Run `action(*args)`; a link in the way is logged and skipped, not fatal: a fleet must
    start even when the agent left a link where a folder belongs."""
    try:
        action(*args)
    except UnsafePathError as exc:
        logger.warning("%s left as it is: %s", shown, exc)


def _copy_missing(template: Path, workspace: Path) -> None:
    if not template.is_dir():
        logger.warning("workspace template %s does not exist; nothing copied", template)
        return
    for source in sorted(template.rglob("*")):
        relative = source.relative_to(template)
        if not source.is_file() or _SKIPPED_PARTS.intersection(relative.parts):
            continue
        shown = relative.as_posix()
        try:
            # only if nothing (not even a link) has the name: a concurrent creator or the
            # user always wins, and no partial file is ever seen
            if lstat(workspace, relative) is not None:
                continue
            if create_exclusively(workspace, relative, source.read_bytes()):
                logger.info("copied %s into the workspace", shown)
        except UnsafePathError as exc:
            logger.warning("template file %s not copied: %s", shown, exc)


def _mirror_skills(source: Path, workspace: Path) -> None:
    mirror = SHIPPED_SKILLS_DIR.as_posix()
    make_folders(workspace, mirror)
    if not source.is_dir():
        logger.warning("shipped skills folder %s does not exist; no skills mirrored", source)
        wanted: dict[str, bytes] = {}
    else:
        wanted = {p.name: p.read_bytes() for p in sorted(source.glob("*.md")) if p.is_file()}
    for name, data in wanted.items():
        target = f"{mirror}/{name}"
        try:
            if read_bytes(workspace, target) == data:
                continue
        except OSError:  # missing, or a link: replaced below either way
            pass
        write_replace(workspace, target, data)
    for stale, _ in entries(workspace, mirror):
        if stale.endswith(".md") and stale not in wanted:
            unlink(workspace, f"{mirror}/{stale}")
