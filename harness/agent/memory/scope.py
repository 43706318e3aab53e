"""Whose memory a conversation reads and writes: `AGENT_MEMORY_SCOPE`.

    shared    one memory for the whole agent (the default): `MEMORY.md` and `memory/` at the
              workspace's root. Right for a personal bot: what it learns in one chat it knows
              in the next.
    per-chat  one memory per conversation, for a bot many people talk to: each session's
              `MEMORY.md` and daily logs live under `memory/chats/<session>/` of the private
              folder (the state folder, outside the workspace), which the file tools and the
              shell cannot see, so one chat never reads what another told it.

A memory root is a folder laid out like the workspace's root (`MEMORY.md`, `memory/`), so the
functions in `harness.agent.memory.notes`, `distill` and `memory.history` work on any root.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from harness.settings import MemoryScope

CHATS_DIR = Path("memory") / "chats"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def chat_folder_name(session_key: str) -> str:
    """A folder name for `session_key`: readable, safe on any file system, and unique (a short
    hash keeps keys that differ only in unsafe characters apart)."""
    readable = _UNSAFE.sub("-", session_key).strip("-")[:60] or "chat"
    digest = hashlib.sha256(session_key.encode()).hexdigest()[:10]
    return f"{readable}-{digest}"


def memory_root(
    workspace: Path, scope: MemoryScope, session_key: str | None, private: Path | None = None
) -> Path:
    """The folder holding the memory of a conversation: the workspace itself when memory is
    shared or the run has no session (a sub-agent, a cron job), else its chat folder under
    `private` (the agent's private folder; the workspace when not given). The folder is not
    created here."""
    if scope == "shared" or not session_key:
        return workspace
    return (private or workspace) / CHATS_DIR / chat_folder_name(session_key)


def all_roots(workspace: Path, private: Path | None = None) -> list[Path]:
    """Every memory root that exists: the workspace, then each chat folder under `private`
    (the workspace when not given), sorted. The heartbeat distils each one on its own."""
    chats = (private or workspace) / CHATS_DIR
    found = sorted(p for p in chats.iterdir() if p.is_dir()) if chats.is_dir() else []
    return [workspace, *found]
