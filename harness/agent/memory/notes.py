"""The agent's memory: `MEMORY.md` (distilled, long-lived facts) and daily logs of notes.

A daily log is `memory/YYYY-MM-DD.md`, dated in the agent's time zone:

    # 2026-07-06

    ### 09:14:02
    The user's sister is called Ada.

    ### 17:40:55
    Prefers answers in French after 6 pm.

Notes are appended by the `remember` tool; distilling the logs into `MEMORY.md` is not this
module's job. The prompt gets `MEMORY.md`, yesterday's log and today's log (`memory_context`).
"""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta
from pathlib import Path

from harness.file_writes import wrote
from harness.shared_lock import locked
from harness.workspace_files import open_fd, read_optional_text
from harness.workspace_memo import Memo, files_stamp

MEMORY_FILE = "MEMORY.md"
MEMORY_DIR = "memory"
DEFAULT_CAP = 10_000
CUT_MARKER = "[... older memory cut to fit ...]\n"


def log_path(workspace: Path, day: date) -> Path:
    """Return the path of the daily log for `day`: `workspace/memory/YYYY-MM-DD.md`."""
    return workspace / _log_name(day)


def append_note(workspace: Path, note: str, now: datetime) -> Path:
    """Append `note` to the log of `now`'s local date and return the log's path.

    `now` must be time zone-aware and expressed in the agent's time zone: its local date picks
    the file and its local time heads the entry (`### HH:MM:SS`). The file is created with its
    `# YYYY-MM-DD` heading if needed (and `memory/` too). The entry is written with one
    `write` under the log's lock (`harness.shared_lock.locked`: a Redis lock across hosts, else
    an exclusive `flock`), so concurrent appenders (threads, processes or hosts) never
    interleave or both write the heading. The log is opened without following a link
    (`harness.workspace_files`): a log or `memory/` that is a link raises `UnsafePathError`.
    Raises ValueError for a naive `now` or a blank note, OSError if the file cannot be written.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"append_note needs a time zone-aware time, got {now.isoformat()}")
    text = note.strip()
    if not text:
        raise ValueError("a memory note must not be blank")
    path = log_path(workspace, now.date())
    entry = f"\n### {now.strftime('%H:%M:%S')}\n{text}\n"
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    fd = open_fd(workspace, path.relative_to(workspace), flags, create_parents=True)
    try:
        with locked(path, fd):
            if os.fstat(fd).st_size == 0:
                entry = f"# {now.date().isoformat()}\n{entry}"
            data = entry.encode("utf-8")
            # A regular-file write is whole unless the disk is full or a signal lands; finish
            # it while still holding the lock so no other entry can land in the middle.
            while data:
                data = data[os.write(fd, data) :]
    finally:
        os.close(fd)
    wrote(path)
    return path


def memory_context(workspace: Path, now: datetime, cap: int = DEFAULT_CAP) -> str:
    """Return the memory text for the system prompt; the empty string when there is none.

    Joins `MEMORY.md`, yesterday's log and today's log (dates from `now`'s local date), each
    under a `###` heading naming its file; missing or blank files are left out. The result
    depends only on those files and on the date, so it is identical for every `now` of the
    same day until a file changes. Longer than `cap` characters, the oldest text is dropped:
    the result keeps the newest text, starting at a line boundary after `CUT_MARKER`, and is
    at most `cap` characters long. A file that is a link is left out with a warning. Raises
    ValueError if `cap` cannot hold the marker, and OSError for a file that exists but cannot
    be read.
    """
    if cap <= len(CUT_MARKER):
        raise ValueError(f"cap must be more than {len(CUT_MARKER)} characters, got {cap}")
    today = now.date()
    yesterday = today - timedelta(days=1)
    parts = [
        ("Long-term memory", MEMORY_FILE),
        (f"Yesterday's log, {yesterday.isoformat()}", _log_name(yesterday)),
        (f"Today's log, {today.isoformat()}", _log_name(today)),
    ]

    def read() -> str:
        sections = []
        for title, relative in parts:
            body = read_optional_text(workspace, relative, "memory file")
            if body:
                sections.append(f"### {title} ({relative})\n\n{body}")
        return _keep_newest("\n\n".join(sections), cap)

    # read again only when one of the files changed (a memory root per chat: bounded)
    stamp = files_stamp(workspace, [relative for _, relative in parts])
    return _contexts.get((workspace, today, cap), stamp, read)


_contexts: Memo[str] = Memo(max_entries=64)


def _log_name(day: date) -> str:
    return f"{MEMORY_DIR}/{day.isoformat()}.md"


def _keep_newest(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    tail = text[len(text) - (cap - len(CUT_MARKER)) :]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1 :]
    return CUT_MARKER + tail
