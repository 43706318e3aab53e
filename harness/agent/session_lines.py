"""What one line of a session file is (`SessionLine`, `CompactionLine`) and how a run of the
file's bytes becomes lines (`parse_lines`): the file's format, shared by the store
(`harness.agent.session`) and the views it keeps of files it read (`session_views`)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.llm.types import Message

# the store's logger: what a reader skips is reported under the store's name
log = logging.getLogger("harness.agent.session")


def _now() -> datetime:
    return datetime.now(UTC)


class _Line(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ts: AwareDatetime = Field(default_factory=_now)
    run_id: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class SessionLine(_Line):
    """One message of the conversation as stored.

    `event_id` is the bus event a user message came from; `run_id` the run that wrote the line;
    `meta["idem"]`, when set, is the idempotency key `SessionStore.append_once` checks.
    `proactive` marks an assistant message the agent sent into the chat outside the chat's own
    turn (a sub-agent's answer, a scheduled turn's message: `harness.agent.proactive`), and
    `source` says which. Lines written before these fields existed read as not proactive.
    """

    kind: Literal["message"] = "message"
    message: Message
    event_id: str | None = None
    proactive: bool = False
    source: str | None = None


class CompactionLine(_Line):
    """A checkpoint: `summary` stands for every line before it.

    `covered_idem` keeps the idempotency keys of the message lines the summary replaced (the
    latest `COVERED_IDEM_LIMIT`), so `append_once` still refuses a message compacted away.
    """

    kind: Literal["compaction"] = "compaction"
    summary: str = Field(min_length=1)
    covered_idem: tuple[str, ...] = ()


Line = Annotated[SessionLine | CompactionLine, Field(discriminator="kind")]
LINE_ADAPTER: TypeAdapter[SessionLine | CompactionLine] = TypeAdapter(Line)


def parse_lines(raw: bytes, name: str, first: int = 1) -> list[SessionLine | CompactionLine]:
    """The lines of `raw` (bytes of file `name`, its line `first` first), in order. A line that
    does not parse (a write cut short by a crash) is skipped with a warning naming its number;
    blank lines are skipped silently. Never raises for the content."""
    lines: list[SessionLine | CompactionLine] = []
    for number, chunk in enumerate(raw.split(b"\n"), start=first):
        if not chunk.strip():
            continue
        try:
            lines.append(LINE_ADAPTER.validate_json(chunk))
        except ValidationError as exc:
            log.warning(
                "session %s: skipping unreadable line %d (%d bytes): %s",
                name, number, len(chunk), exc.errors()[0]["msg"],
            )  # fmt: skip
    return lines
