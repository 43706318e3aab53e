"""The system prompt: stable blocks a provider can cache, then one volatile block of runtime facts.

Stable blocks, in order, each omitted when empty:

1. identity: "You are {agent_name}.", then `SOUL.md` and `IDENTITY.md` (both when both exist)
2. `## About the User`: `USER.md`
3. `## Memory`: `MEMORY.md`, yesterday's and today's logs (`memory_context`)
4. `## Skills`: the skills index, with how to use it
5. the tool guidelines the caller passes
6. `## Delegation`: when to use which `delegate_*` tool, and the named agents it may call

Then one volatile block: the current time (ISO 8601 with offset, and the zone name), the
workspace path and the channel, and the notes on the agent's own functions (load errors,
failed runs) when there are any.

Caching. The stable blocks depend only on the workspace files and the date, never on the time
of day, so two calls on the same day give byte-identical stable blocks and the provider's
cached prefix is reused. They do change when a file they show changes: a `remember` note
appends to today's log, which changes the memory block and so the cached prefix from that
block on, for the next turn. That is expected; a new day changes it too (yesterday/today).
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime
from pathlib import Path

from harness.agent.memory.notes import memory_context
from harness.agent.skills import load_skills, skills_index
from harness.llm.types import SystemBlock
from harness.workspace_files import read_optional_text
from harness.workspace_memo import Memo, files_stamp

IDENTITY_FILES = ("SOUL.md", "IDENTITY.md")
USER_FILE = "USER.md"
PROMPT_FILES = (*IDENTITY_FILES, USER_FILE)

SKILLS_INTRO = (
    "Skills are instructions for specific jobs. Before you do a job a skill covers, read its "
    "file with the `read` tool (the path is given) and follow it."
)

DELEGATION_GUIDANCE = """\
## Delegation

Hand multi-step work (research, changes across several files, long tool sequences) to a \
sub-agent instead of doing every step yourself; do one or two tool calls yourself.
- `delegate_task`: you need the result now to answer; the sub-agent's answer comes back to you.
- `delegate_async_task`: background work the user need not wait for; the sub-agent reports \
to the user itself when done, so tell the user it has started.
- `delegate_scheduled_task`: work for later ("in an hour", "at 9am", "tomorrow"); work out the \
time from the current time below and give it with its time zone offset."""


def build_system_prompt(
    workspace: Path,
    *,
    agent_name: str,
    channel: str,
    now: datetime,
    tool_guidelines: str,
    tz_name: str,
    memory_root: Path | None = None,
    function_notes: str = "",
    transcript: Path | None = None,
    instructions: str | None = None,
    delegates: str = "",
) -> list[SystemBlock]:
    """Return the system prompt: the non-empty stable blocks in order, then one volatile block.

    `now` must be time zone-aware; it is converted to `tz_name` (an IANA zone such as
    `Europe/Paris`), whose local date picks the memory logs. The workspace must already exist
    (see `ensure_workspace`); missing files just leave their section out, and so do files
    that are links (`harness.workspace_files`: skipped with a warning). Raises ValueError
    for a naive `now` or an unknown `tz_name`, OSError for an unreadable workspace file.
    `function_notes` (load errors and failed runs of the agent's functions) joins the volatile
    block, and so does where this conversation's own `transcript` can be read, when given.
    `instructions` (a named agent's, from its file) take the place of `SOUL.md`, `IDENTITY.md`
    and `USER.md`: a named agent is the specialist its file describes. `delegates` (the named
    agents this agent may call, one per line) ends the Delegation section.
    """
    local = _localize(now, tz_name)
    # a named agent's instructions replace the prompt files, which are then not read
    files = _prompt_files(workspace) if instructions is None else dict.fromkeys(PROMPT_FILES, "")
    stable = [
        _identity(files, agent_name, instructions),
        _section("About the User", files[USER_FILE]),
        _section("Memory", memory_context(memory_root or workspace, local)),
        _skills(workspace),
        tool_guidelines.strip(),
        f"{DELEGATION_GUIDANCE}\n\n{delegates}" if delegates else DELEGATION_GUIDANCE,
    ]
    blocks = [SystemBlock(text=text) for text in stable if text]
    facts = _runtime_facts(workspace, channel, local, tz_name)
    if transcript is not None:
        facts = (
            f"{facts}\nThis conversation's transcript (JSON lines, read-only): {transcript} "
            "(with bash: $SESSION_TRANSCRIPT)"
        )
    if function_notes:
        facts = f"{facts}\n\n{function_notes}"
    blocks.append(SystemBlock(text=facts, volatile=True))
    return blocks


def _localize(now: datetime, tz_name: str) -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"the system prompt needs a time zone-aware time, got {now.isoformat()}")
    try:
        zone = zoneinfo.ZoneInfo(tz_name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {tz_name!r}; use an IANA name like 'UTC'") from exc
    return now.astimezone(zone)


def _identity(files: dict[str, str], agent_name: str, instructions: str | None) -> str:
    if instructions is not None:
        return "\n\n".join(p for p in (f"You are {agent_name}.", instructions.strip()) if p)
    parts = [text for text in (files[name] for name in IDENTITY_FILES) if text]
    return "\n\n".join([f"You are {agent_name}.", *parts])


def _skills(workspace: Path) -> str:
    index = skills_index(load_skills(workspace))
    return _section("Skills", f"{SKILLS_INTRO}\n\n{index}") if index else ""


def _runtime_facts(workspace: Path, channel: str, now: datetime, tz_name: str) -> str:
    return (
        "## Runtime\n\n"
        f"- Current time: {now.isoformat(timespec='seconds')} ({tz_name}), {now:%A}\n"
        f"- Workspace: {workspace.resolve()}\n"
        f"- Channel: {channel}"
    )


def _section(title: str, body: str) -> str:
    return f"## {title}\n\n{body}" if body else ""


_texts: Memo[dict[str, str]] = Memo(max_entries=16)


def _prompt_files(workspace: Path) -> dict[str, str]:
    """Each prompt file's text by name ("" when missing). A link (or hard link) is skipped
    with a warning, never followed: `IDENTITY.md -> ../.env` would put the operator's secrets
    in every request. Read again only when one of them changed (`harness.workspace_memo`)."""
    stamp = files_stamp(workspace, PROMPT_FILES)
    return _texts.get(workspace, stamp, lambda: _read_all(workspace))


def _read_all(workspace: Path) -> dict[str, str]:
    return {name: read_optional_text(workspace, name, "prompt file") for name in PROMPT_FILES}
