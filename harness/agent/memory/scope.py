"""Whose memory a conversation reads and writes: `AGENT_MEMORY_SCOPE`.

    shared    one memory for the whole agent (the default): `MEMORY.md` and `memory/` at the
              workspace's root. Right for a personal bot: what it learns in one chat it knows
              in the next.
    per-chat  one memory per conversation, for a bot many people talk to: each session's
              `MEMORY.md` and daily logs live under `memory/chats/<session>/` of the private
              folder (the state folder, outside the workspace), which the file tools and the
              shell cannot see, so one chat never reads what another told it.
    per-person one memory per person, across every chat they write in: under
              `memory/people/<person>/` of the private folder, keyed by the sender's stable id
              (`harness.agent.speakers`: `telegram:123`). A group's turn uses the memory of
              who wrote the message that started it. A run with no sender (a sub-agent, a cron
              job) falls back to its chat's memory, or the shared one without a chat.

A named agent (`harness.agent.roster`) has a memory of its own, laid out the same way under
`memory/agents/<name>/`: of the workspace when memory is shared, per chat under
`memory/agents/<name>/chats/<session>/` and per person under `memory/agents/<name>/people/
<person>/` of the private folder. The default agent's is as above.

A memory root is a folder laid out like the workspace's root (`MEMORY.md`, `memory/`), so the
functions in `harness.agent.memory.notes`, `distill` and `memory.history` work on any root.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from harness.agent.speakers import Speaker
from harness.settings import MemoryScope

CHATS_DIR = Path("memory") / "chats"
PEOPLE_DIR = Path("memory") / "people"
AGENTS_DIR = Path("memory") / "agents"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def chat_folder_name(session_key: str) -> str:
    """A folder name for `session_key`: readable, safe on any file system, and unique (a short
    hash keeps keys that differ only in unsafe characters apart)."""
    readable = _UNSAFE.sub("-", session_key).strip("-")[:60] or "chat"
    digest = hashlib.sha256(session_key.encode()).hexdigest()[:10]
    return f"{readable}-{digest}"


def memory_root(
    workspace: Path,
    scope: MemoryScope,
    session_key: str | None,
    private: Path | None = None,
    agent: str | None = None,
    *,
    person: Speaker | None = None,
) -> Path:
    """The folder holding the memory of a conversation: the workspace itself when memory is
    shared or the run has no session (a sub-agent, a cron job), else its chat folder under
    `private` (the agent's private folder; the workspace when not given). For a named `agent`
    (None: the default agent), the same under its own folder (see the module docstring).
    Per person, the folder of `person` (who wrote the run's message), else as per chat. The
    folder is not created here."""
    base = private or workspace
    if agent is None:
        shared, chats, people = workspace, base / CHATS_DIR, base / PEOPLE_DIR
    else:
        shared = workspace / AGENTS_DIR / agent
        chats, people = base / AGENTS_DIR / agent / "chats", base / AGENTS_DIR / agent / "people"
    if scope == "per-person" and person is not None:
        return people / chat_folder_name(person.id)
    if scope == "shared" or not session_key:
        return shared
    return chats / chat_folder_name(session_key)


def all_roots(workspace: Path, private: Path | None = None) -> list[Path]:
    """Every memory root that exists: the workspace, then each chat folder under `private`
    (the workspace when not given), sorted, then each person's, then each named agent's roots
    (its shared one, its chats, its people). The heartbeat distils each one on its own."""
    base = private or workspace
    agents = {p.name for p in [*_folders(workspace / AGENTS_DIR), *_folders(base / AGENTS_DIR)]}
    named: list[Path] = []
    for name in sorted(agents):
        shared = workspace / AGENTS_DIR / name
        named += [shared] if shared.is_dir() else []
        named += _folders(base / AGENTS_DIR / name / "chats")
        named += _folders(base / AGENTS_DIR / name / "people")
    return [workspace, *_folders(base / CHATS_DIR), *_folders(base / PEOPLE_DIR), *named]


def root_label(root: Path, workspace: Path, private: Path | None = None) -> str:
    """A short name for a root of `all_roots` that no other root has: "" for the workspace,
    the chat folder's name for a default agent's chat, `people/<person>` for a person's,
    `agents/<name>[/<chat>|/people/<person>]` for a named agent's (the heartbeat prefixes its
    steps with it)."""
    if root == workspace:
        return ""
    for base in (workspace, private or workspace):
        if root.is_relative_to(base / AGENTS_DIR):
            parts = root.relative_to(base / AGENTS_DIR).parts
            kept = parts[1:] if parts[1:2] == ("people",) else parts[2:]  # chats: as before
            return "/".join(("agents", parts[0], *kept))
    if root.parent == (private or workspace) / PEOPLE_DIR:
        return f"people/{root.name}"
    return root.name


def _folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.is_dir()) if parent.is_dir() else []
