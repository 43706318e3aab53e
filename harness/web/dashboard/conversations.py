"""What the conversations pages show: the chats the agent answered, and one chat's transcript.

The chats come from the run index (the turns of `agent-handle-message`, newest first, one
per session), so a chat is listed while its latest turn is retained. A transcript is read
where the agent keeps it, the session store (`harness.agent.session`, under the state
folder): the default agent's file and each named agent's or network's file for the same
chat, merged in time order, with the approvals the chat was asked (the `ask-approval` runs
of the session) and their answers. Every text is redacted here, when it is shown, and tool
arguments and results are bounded. Blocking: call off the event loop.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agent.session import CompactionLine, SessionLine, SessionStore
from harness.events import MESSAGE_HANDLER
from harness.observe.run_filters import RunFilter, find_runs
from harness.records.stores import redis_records
from harness.redaction import redact
from harness.runtime.instance import Runtime
from harness.runtime.sessions import session_of
from harness.web.dashboard.folding import ASK_APPROVAL, CHAT_COMMAND, bounded

CHATS_SCANNED = 2000
"""Turns read to list the chats (each chat shows once, by its newest turn)."""
ITEMS_SHOWN = 400
"""The newest transcript items a page shows; older ones are counted, not shown."""


@dataclass(frozen=True)
class Chat:
    """One conversation: its session key, channel, chat id, the person who wrote last, when
    (ms since the epoch), and the start of what they wrote."""

    session_key: str
    channel: str
    chat_id: str
    person: str
    last_ms: int
    last_text: str


@dataclass(frozen=True)
class ToolCallView:
    """A tool call of an assistant message, with the result that answered it ("" and
    `answered` False while none has)."""

    id: str
    name: str
    arguments: str
    result: str = ""
    is_error: bool = False
    answered: bool = False


@dataclass(frozen=True)
class Item:
    """One entry of a transcript. `kind` is `user`, `assistant`, `checkpoint` (a compaction
    summary) or `approval`; `ts_ms` when it was written; `agent` the named agent or network
    whose conversation it is ("" for the default agent)."""

    kind: str
    ts_ms: int
    text: str = ""
    agent: str = ""
    run_id: str = ""
    source: str = ""
    calls: tuple[ToolCallView, ...] = ()
    tool: str = ""
    state: str = ""
    by: str = ""


@dataclass(frozen=True)
class Transcript:
    """A chat's newest `items` (at most `ITEMS_SHOWN`) and how many older ones were left out."""

    session_key: str
    items: tuple[Item, ...]
    hidden: int = 0


def chats(runtime: Runtime, limit: int = 100) -> list[Chat]:
    """The `limit` chats with the newest turns, newest first. Raises `BusUnavailableError`
    when Redis is down."""
    found: dict[str, Chat] = {}
    for function in (MESSAGE_HANDLER, CHAT_COMMAND):
        for record in find_runs(runtime, RunFilter(function=function), CHATS_SCANNED):
            chat = _chat(record.event, record.created_at)
            if chat is not None and (
                chat.session_key not in found or found[chat.session_key].last_ms < chat.last_ms
            ):
                found[chat.session_key] = chat
    return sorted(found.values(), key=lambda chat: -chat.last_ms)[:limit]


def _chat(event: dict[str, Any], created_ms: int) -> Chat | None:
    data = event.get("data")
    key = session_of(event)
    if not key or not isinstance(data, dict):
        return None
    sender, destination = _object(data.get("sender")), _object(data.get("destination"))
    person = str(sender.get("name") or sender.get("username") or sender.get("id") or "")
    return Chat(
        session_key=key,
        channel=str(data.get("channel", "")),
        chat_id=str(destination.get("chat_id", "")),
        person=redact(person),
        last_ms=created_ms,
        last_text=bounded(str(data.get("message", "")), 120),
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def transcript(runtime: Runtime, root: Path, session_key: str) -> Transcript:
    """The transcript of `session_key` from the session stores under state folder `root`,
    with its approvals (see the module docstring). Empty when nothing was kept. Raises
    `BusUnavailableError` when Redis is down."""
    items: list[Item] = []
    for agent, store in _stores(root):
        items += _items(store.load(session_key), agent)
    items += _approvals(runtime, session_key)
    items.sort(key=lambda item: item.ts_ms)  # stable: a file's own order holds on a tie
    hidden = max(0, len(items) - ITEMS_SHOWN)
    return Transcript(session_key, tuple(items[hidden:]), hidden)


@functools.lru_cache(maxsize=8)
def _store(folder: Path) -> SessionStore:
    """One store per folder, kept: it parses only what was appended since its last read."""
    return SessionStore(folder.parent, folder=folder)


def _stores(root: Path) -> Iterator[tuple[str, SessionStore]]:
    """The default agent's store, then each named agent's and network's, by name."""
    base = root / "sessions"
    yield "", _store(base)
    for kind in ("agents", "networks"):
        folder = base / kind
        if folder.is_dir():
            for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
                yield sub.name, _store(sub)


def _ms(line: SessionLine | CompactionLine) -> int:
    return int(line.ts.timestamp() * 1000)


def _items(lines: list[SessionLine | CompactionLine], agent: str) -> list[Item]:
    """The lines of one file as items: a tool message's results are set on the calls of the
    assistant message they answer, which is where they show."""
    results = {
        result.tool_call_id: result
        for line in lines
        if isinstance(line, SessionLine)
        for result in line.message.tool_results
    }
    items = []
    for line in lines:
        if isinstance(line, CompactionLine):
            items.append(Item("checkpoint", _ms(line), bounded(line.summary), agent))
            continue
        message = line.message
        if message.role == "tool":
            continue
        calls = tuple(
            _call(call.id, call.name, call.arguments, results.get(call.id))
            for call in message.tool_calls
        )
        item = Item(
            kind=message.role, ts_ms=_ms(line), text=redact(message.text), agent=agent,
            run_id=line.run_id or "", source=line.source or "", calls=calls,
        )  # fmt: skip
        items.append(item)
    return items


def _call(call_id: str, name: str, arguments: dict[str, Any], result: Any) -> ToolCallView:
    args = bounded(json.dumps(arguments, ensure_ascii=False, indent=1, default=str))
    if result is None:
        return ToolCallView(call_id, name, args)
    return ToolCallView(call_id, name, args, bounded(result.content), result.is_error, True)


def _approvals(runtime: Runtime, session_key: str) -> list[Item]:
    """The approvals asked in the chat, each with its answer (`pending` while it has none)."""
    wanted = RunFilter(function=ASK_APPROVAL, session=session_key)
    store = redis_records(runtime).approvals
    items = []
    for record in find_runs(runtime, wanted, ITEMS_SHOWN):
        data = record.event.get("data")
        if not isinstance(data, dict) or not data.get("approval_id"):
            continue
        claim = store.settled(str(data["approval_id"]))
        items.append(
            Item(
                kind="approval",
                ts_ms=record.created_at,
                text=bounded(str(data.get("summary", ""))),
                run_id=str(data.get("run_id", "")),
                tool=str(data.get("tool", "")),
                state=claim.state if claim else "pending",
                by=redact(claim.by) if claim else "",
            )
        )
    return items
