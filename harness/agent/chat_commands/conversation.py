"""What the commands change in a chat: its session (`/new`, `/reset`), today's working notes
(`/reset`) and its live runs (`/stop`, `/status`): its turns and the tasks they started."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from harness.agent.deps import AgentDeps
from harness.agent.memory.notes import log_path
from harness.agent.memory.scope import memory_root
from harness.agent.roster.bindings import Target
from harness.agent.roster.spec import DEFAULT_AGENT
from harness.agent.session import SessionStore
from harness.agent.speakers import Speaker
from harness.events import MESSAGE_HANDLER
from harness.runtime import Runtime
from harness.runtime.kicker import kick_all
from harness.runtime.ledger import RunRecord

LIVE = frozenset({"queued", "pending", "running", "sleeping", "waiting"})
"""Statuses of a run that has not ended (a steered run's message is in its holder's turn)."""
CLEARED_DIR = "cleared"
"""Under a memory root's `memory/`: daily logs `/reset` set aside (kept, never read again)."""
_RUNS_LOOKED_AT = 200
TASK_DEPTH = 3
"""How many generations of runs below the chat's own `/stop` reaches."""


def session_store(deps: AgentDeps, target: Target) -> SessionStore:
    """The store holding the chat's conversation with `target`, as its turn reads it."""
    if target.is_network:
        return deps.sessions.for_network(target.name)
    if target.name == DEFAULT_AGENT:
        return deps.sessions
    return deps.sessions.for_agent(target.name)


def fresh_session(store: SessionStore, session_key: str) -> bool:
    """Start the chat's conversation afresh: the old file is kept under `sessions/archive/`
    (`SessionStore.replace`), the chat's next turn starts from nothing. Idempotent (a replay
    archives an empty file at most). Returns True when there was a conversation to keep."""
    return bool(store.count(session_key)) and store.replace(session_key, []) is not None


def clear_today_notes(
    deps: AgentDeps, target: Target, session_key: str, speaker: Speaker | None, now: datetime
) -> bool:
    """Set today's daily log (the working notes the prompt shows) of the chat's memory aside,
    as `memory/cleared/<day>-<time>.md` of the same root: kept, never read again. `now` is
    in the agent's time zone. Returns True when there was a log. Idempotent."""
    agent = None if target.is_network or target.name == DEFAULT_AGENT else target.name
    where = (deps.workspace, deps.settings.agent_memory_scope, session_key, deps.private)
    root = memory_root(*where, agent, person=speaker)
    today = log_path(root, now.date())
    if not today.is_file():
        return False
    aside = today.parent / CLEARED_DIR / f"{now.date().isoformat()}-{now.strftime('%H%M%S')}.md"
    aside.parent.mkdir(parents=True, exist_ok=True)
    os.replace(today, _free(aside))
    return True


def _free(path: Path) -> Path:
    n, found = 1, path
    while found.exists():
        found = path.with_stem(f"{path.stem}-{n}")
        n += 1
    return found


def live_runs(runtime: Runtime, session_key: str) -> list[RunRecord]:
    """The chat's runs that have not ended (its turn, its sub-agents), oldest first."""
    index = runtime.run_index
    ids = index.newest(runtime.keys.runs_of_session(session_key), 0, 0, _RUNS_LOOKED_AT)
    return [r for r in reversed(index.records(ids)) if r.status in LIVE]


def _cancel(runtime: Runtime, run_id: str, reason: str) -> bool:
    live, kicks = runtime.ledger.request_cancel(run_id, reason, runtime.now_ms())
    kick_all(runtime.kicker, kicks)
    return live


def stop_turns(runtime: Runtime, session_key: str, reason: str) -> list[str]:
    """Ask every live turn of the chat to stop at its next step (`request_cancel`; a turn
    waiting on an approval or a sleep stops at once). Returns the ids of the runs asked."""
    asked = []
    for record in live_runs(runtime, session_key):
        if record.function_id == MESSAGE_HANDLER and _cancel(runtime, record.id, reason):
            asked.append(record.id)
    return asked


def stop_tasks(runtime: Runtime, session_key: str, reason: str) -> list[RunRecord]:
    """Ask every live run that the chat's runs started (a background task outliving the turn
    that delegated it, a sub-agent, a network, and theirs in turn, `TASK_DEPTH` deep) to stop,
    found through the run index (`keys.runs_of_parent`). Returns the records of the runs
    asked, oldest first. A turn's own children stop with it; this reaches those of turns
    that already ended."""
    index = runtime.run_index
    parents = index.newest(runtime.keys.runs_of_session(session_key), 0, 0, _RUNS_LOOKED_AT)
    asked: dict[str, RunRecord] = {}
    for _ in range(TASK_DEPTH):
        children: list[str] = []
        for parent in parents:
            children += index.newest(runtime.keys.runs_of_parent(parent), 0, 0, _RUNS_LOOKED_AT)
        live = [r for r in index.records(children) if r.status in LIVE and r.id not in asked]
        asked.update((r.id, r) for r in live if _cancel(runtime, r.id, reason))
        parents = children
    return sorted(asked.values(), key=lambda r: r.created_at)


def task_label(record: RunRecord) -> str:
    """A stopped task as the chat is told it: `researcher (run 1a2b3c4d)`."""
    data = record.event.get("data")
    agent = data.get("agent") or data.get("network") if isinstance(data, dict) else None
    return f"{agent or record.function_id} (run {record.id[:8]})"
