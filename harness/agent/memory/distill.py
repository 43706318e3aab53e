"""Distillation of the daily logs into `MEMORY.md`: what is new, whether it is due, what the
model is asked, and whether its answer may be written.

Positions, not dates: `memory/.distilled.json` records, per daily log, how many bytes have
been distilled and a hash of those bytes. What is new is everything past that point, so each
note is sent to the model once. A log whose distilled part no longer matches its hash was
edited by hand and is sent again from its start. Logs are only ever appended to (under an
exclusive lock, see `harness.agent.memory.notes.append_note`), and are read under the same
log's lock (`harness.shared_lock`: shared `flock` on one host, the Redis lock across hosts), so
a position always falls between two whole entries.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from harness.agent.memory.notes import MEMORY_DIR
from harness.shared_lock import locked
from harness.workspace_files import UnsafePathError, files_in, open_fd, read_bytes, write_replace

HEARTBEAT_FUNCTION = "agent-heartbeat"
DISTILL_EVENT = "agent.memory.distill"  # data: {"force": bool}
STATE_FILE = ".distilled.json"
_STATE = f"{MEMORY_DIR}/{STATE_FILE}"
log = logging.getLogger(__name__)
MAX_BATCH_BYTES = 48_000
_LOG_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_ENTRY_START = b"\n### "
_NOT_MEMORY = re.compile(
    r"^\W*(i'?m sorry|sorry|i apologi[sz]e|apologies|unfortunately|as an ai|"
    r"i (?:cannot|can ?not|can't|won't|am unable|'m unable|am not able))\b",
    re.IGNORECASE,
)
_FENCED = re.compile(r"```[a-zA-Z]*\n(.*?)\n```", re.DOTALL)

DISTILL_PROMPT = """\
You maintain MEMORY.md, the long-term memory of a personal AI assistant: the facts about its \
person that should still be known next week and next year (people, preferences, dates, \
decisions, ongoing projects). The next message holds the current MEMORY.md and the notes \
logged since it was last updated.

Return the complete updated MEMORY.md:
- Keep every fact of the current MEMORY.md that is still true, in its words. The person may \
have edited it by hand: their edits win.
- Add what the new notes teach that is worth keeping; merge duplicates.
- When a new note supersedes an older fact, replace the older fact; delete only what the \
notes show to be no longer true.
- Keep it concise Markdown, organised under headings by topic.
- Never include secrets (passwords, keys, tokens).

Reply with the document only, no preamble and no code fence."""


class LogPosition(BaseModel, frozen=True):
    """How far one daily log has been distilled: byte `end`, and the SHA-256 of bytes [0, end)."""

    end: int = Field(ge=0)
    sha256: str


class DistillState(BaseModel):
    """The contents of `memory/.distilled.json`."""

    positions: dict[str, LogPosition] = Field(default_factory=dict)
    last_distilled_at: datetime | None = None
    held_back_at: datetime | None = None


class LogChunk(BaseModel, frozen=True):
    """Bytes [start, end) of one daily log, sent to the model as `text`."""

    name: str
    start: int
    end: int
    text: str
    prefix_sha256: str  # of bytes [0, end): the position once this chunk is distilled


class PendingLogs(BaseModel, frozen=True):
    """What is new in the logs: `chunks` to send now (at most about `MAX_BATCH_BYTES`) and
    `total_bytes` new in all (more than the chunks hold when the batch was cut)."""

    chunks: tuple[LogChunk, ...] = ()
    total_bytes: int = 0
    oldest_day: date | None = None


@dataclass(frozen=True)
class Thresholds:
    """When the heartbeat distils: more than `min_bytes` new, or `max_age` since the last."""

    min_bytes: int = 4096
    max_age: timedelta = timedelta(hours=8)
    max_shrink: float = 0.5


@dataclass(frozen=True)
class Decision:
    """Whether to call the model now, and why (for the run's result and the logs)."""

    due: bool
    reason: str


def state_path(workspace: Path) -> Path:
    """The path of the position file, `memory/.distilled.json`."""
    return workspace / MEMORY_DIR / STATE_FILE


def load_state(workspace: Path) -> DistillState:
    """The saved positions; an empty state when the file is missing or unreadable (which
    only means that every log is sent again: nothing is lost)."""
    try:
        return DistillState.model_validate_json(read_bytes(workspace, _STATE))
    except (OSError, ValidationError, ValueError):
        return DistillState()


def save_state(workspace: Path, state: DistillState) -> None:
    """Write the positions atomically (replacing a link there, never writing through it)."""
    write_replace(workspace, _STATE, state.model_dump_json(indent=1).encode())


def daily_logs(workspace: Path) -> list[Path]:
    """The daily logs `memory/YYYY-MM-DD.md`, oldest first; links are left out (with a
    warning), and a `memory/` that is a link has none."""
    try:
        names = files_in(workspace, MEMORY_DIR)
    except UnsafePathError as exc:
        log.warning("daily logs skipped: %s", exc)
        return []
    return [workspace / MEMORY_DIR / name for name in names if _LOG_NAME.match(name)]


def _read_locked(workspace: Path, path: Path) -> bytes:
    fd = open_fd(workspace, path.relative_to(workspace), os.O_RDONLY)
    try:
        with locked(path, fd, shared=True), os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    finally:
        os.close(fd)


def _start_of(data: bytes, position: LogPosition | None) -> int:
    if position is None or position.end > len(data):
        return 0
    if hashlib.sha256(data[: position.end]).hexdigest() != position.sha256:
        return 0
    return position.end


def pending_logs(
    workspace: Path, state: DistillState, batch_bytes: int = MAX_BATCH_BYTES
) -> PendingLogs:
    """Read what was logged past each saved position, oldest log first.

    Chunks stop at about `batch_bytes`, cut at an entry boundary (a single entry larger than
    the batch is sent whole), so a month of logs never lands in one request; the rest is
    counted in `total_bytes` and sent by the next distillation. Raises OSError for a log
    that exists but cannot be read.
    """
    chunks: list[LogChunk] = []
    total = 0
    budget = batch_bytes
    oldest: date | None = None
    for path in daily_logs(workspace):
        data = _read_locked(workspace, path)
        start = _start_of(data, state.positions.get(path.name))
        if start >= len(data):
            continue
        total += len(data) - start
        if oldest is None:
            oldest = date.fromisoformat(path.stem)
        if budget <= 0:
            continue
        end = len(data)
        if end - start > budget:
            cut = data.rfind(_ENTRY_START, start + 1, start + budget)
            end = cut + 1 if cut > start else end
        chunks.append(
            LogChunk(
                name=path.name,
                start=start,
                end=end,
                text=data[start:end].decode("utf-8", errors="replace"),
                prefix_sha256=hashlib.sha256(data[:end]).hexdigest(),
            )
        )
        budget -= end - start
    return PendingLogs(chunks=tuple(chunks), total_bytes=total, oldest_day=oldest)


def decide(
    pending: PendingLogs,
    state: DistillState,
    now: datetime,
    thresholds: Thresholds,
    *,
    force: bool = False,
) -> Decision:
    """Whether a distillation is due. Pure.

    Forced: always (a person asked). Otherwise never with nothing new; not within `max_age`
    of a held-back distillation (so a model that keeps answering badly is not paid every
    half hour); when more than `min_bytes` are new; or when `max_age` has passed since the
    last distillation (since the start of the oldest new log's day, before the first one).
    """
    if force:
        return Decision(True, "forced")
    if pending.total_bytes == 0:
        return Decision(False, "nothing new since the last distillation")
    if state.held_back_at is not None and now - state.held_back_at < thresholds.max_age:
        return Decision(False, "the last distillation was held back; waiting before retrying")
    if pending.total_bytes > thresholds.min_bytes:
        return Decision(True, f"{pending.total_bytes} new bytes")
    since = state.last_distilled_at
    if since is None and pending.oldest_day is not None:
        since = datetime.combine(pending.oldest_day, datetime.min.time(), tzinfo=now.tzinfo)
    if since is None or now - since >= thresholds.max_age:
        return Decision(True, f"{pending.total_bytes} new bytes, older than the maximum age")
    return Decision(False, f"{pending.total_bytes} new bytes, below the thresholds")


def render_request(memory_text: str, pending: PendingLogs) -> str:
    """The user message of a distillation: the current MEMORY.md, then each new chunk."""
    current = memory_text.strip() or "(empty)"
    parts = [f"<current_memory>\n{current}\n</current_memory>", "<new_notes>"]
    for chunk in pending.chunks:
        parts.append(f"From {MEMORY_DIR}/{chunk.name}:\n{chunk.text.strip()}")
    if not pending.chunks:
        parts.append("(none: tidy the current memory without losing anything)")
    parts.append("</new_notes>")
    return "\n\n".join(parts)


def clean_candidate(answer: str) -> str:
    """The document in a model's answer: a lone fenced block is unwrapped, the rest stripped."""
    text = answer.strip()
    blocks = _FENCED.findall(text)
    if len(blocks) == 1 and (text.startswith("```") or len(blocks[0]) > len(text) / 2):
        text = blocks[0].strip()
    return text + "\n" if text else ""


def check_candidate(candidate: str, current: str, max_shrink: float) -> str | None:
    """Why `candidate` must not replace `current`, or None when it may. Pure.

    Held back: an empty answer; one that opens like an apology or a refusal; one that keeps
    less than `1 - max_shrink` of the current text's length (ignoring surrounding blanks).
    """
    text = candidate.strip()
    if not text:
        return "the model returned an empty document"
    if _NOT_MEMORY.match(text):
        return f"the model did not return a memory document: {text.splitlines()[0][:120]!r}"
    before, after = len(current.strip()), len(text)
    if before and after < before * (1 - max_shrink):
        dropped = 1 - after / before
        return (
            f"the new version would drop {dropped:.0%} of the text ({before} -> {after} "
            f"characters), more than the {max_shrink:.0%} allowed"
        )
    return None


def advance(state: DistillState, pending: PendingLogs, now: datetime) -> DistillState:
    """The state after `pending`'s chunks were distilled at `now`. Pure and idempotent."""
    positions = dict(state.positions)
    for chunk in pending.chunks:
        old = positions.get(chunk.name)
        if old is None or old.end <= chunk.end:
            positions[chunk.name] = LogPosition(end=chunk.end, sha256=chunk.prefix_sha256)
    return DistillState(positions=positions, last_distilled_at=now, held_back_at=None)


def expired_logs(
    workspace: Path, state: DistillState, today: date, retention_days: int
) -> list[Path]:
    """Logs dated more than `retention_days` before `today` whose every byte is distilled
    (the saved position covers the whole file and its hash matches). Others are kept, however
    old, until a distillation has read them."""
    cutoff = today - timedelta(days=retention_days)
    expired = []
    for path in daily_logs(workspace):
        if date.fromisoformat(path.stem) >= cutoff:
            continue
        data = _read_locked(workspace, path)
        position = state.positions.get(path.name)
        if position is not None and position.end == len(data) and _start_of(data, position):
            expired.append(path)
    return expired
