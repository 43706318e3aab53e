"""`agent-chat-command`: answers a chat command (`harness.events.commands`) without a model
call and without touching the transcript.

It is triggered by the same `agent.message.received` as the chat's turn, with the opposite
predicate (`IS_COMMAND`), so the event is accepted once and exactly one of the two runs. It
has no singleton: a command never queues behind, steers into or cancels the chat's running
turn by arriving, so `/stop` reaches the turn it stops and `/status` answers while a turn
works. Like a turn, it first sends the chat's undelivered replies again (`arrival`), but
shows no typing: the answer comes without a model call. The sender meets the same
`DM_POLICY` gate next (a stranger gets the pairing code,
nothing else). Each effect is one durable step, so a retried run neither archives twice nor
answers twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from harness.agent.arrival import arrive
from harness.agent.chat_commands.conversation import (
    clear_today_notes,
    fresh_session,
    live_runs,
    session_store,
    stop_tasks,
    stop_turns,
    task_label,
)
from harness.agent.chat_commands.reports import (
    USAGE_DAYS,
    ChatState,
    pair_text,
    status_text,
    usage_text,
)
from harness.agent.chat_entry import admitted, bound_target
from harness.agent.deps import AgentDeps, agent_deps
from harness.agent.proactive import send_reply
from harness.agent.roster.bindings import Target
from harness.agent.roster.profile import default_profile, run_profile
from harness.agent.speakers import speaker_of
from harness.agent.transcript import estimate_tokens
from harness.events import MESSAGE_RECEIVED, MessageReceived, ReplyTarget
from harness.events.commands import IS_COMMAND, help_text
from harness.owner import find_owner, speaks_as_owner
from harness.records.stores import redis_records
from harness.runtime import Context, event, function

CHAT_COMMAND = "agent-chat-command"
NOT_OWNER = "Only the owner can do that."
SHARED_NOTES_KEPT = (
    "New conversation started; the old one is kept. Today's working notes were not cleared: "
    "they are the agent's memory for everyone it talks to, so only the owner can clear them."
)


@function(id=CHAT_COMMAND, trigger=event(MESSAGE_RECEIVED, if_=IS_COMMAND), retries=3)
def chat_command(ctx: Context) -> dict[str, Any]:
    """Answer the command of the message event in the chat it came from (see the module)."""
    deps = agent_deps()
    data = MessageReceived.from_event(ctx.event)
    name = data.command or "help"
    # the chat's undelivered replies first, as for a turn; no typing: the answer is at hand
    arrive(ctx, data, deps.settings.dm_policy, acknowledge=False)
    if not admitted(ctx, data, deps.settings.dm_policy):
        return {"command": name, "served": False}
    target = ReplyTarget(
        channel=data.channel,
        destination=data.destination,
        channel_meta=data.channel_meta,
        session_key=data.session_key,
    )
    answer = _ANSWERS.get(name, _help)
    text = answer(_Asked(ctx, deps, data, bound_target(ctx, deps, data)))
    send_reply(ctx, text, target)  # no source: a command's answer stays out of the transcript
    return {"command": name, "served": True}


@dataclass(frozen=True)
class _Asked:
    """A command being answered: its run, the agent's deps, the message, who answers the chat."""

    ctx: Context
    deps: AgentDeps
    data: MessageReceived
    target: Target

    def once(self, work: Callable[[], str]) -> str:
        """`work`'s answer, computed in the durable step "answer" (a retry reuses it)."""
        return str(self.ctx.step.run("answer", work))


def _new(asked: _Asked) -> str:
    def new() -> str:
        kept = fresh_session(session_store(asked.deps, asked.target), asked.data.session_key)
        return "New conversation started." + (" The old one is kept." if kept else "")

    return asked.once(new)


def _reset(asked: _Asked) -> str:
    deps, data, target = asked.deps, asked.data, asked.target

    def reset() -> str:
        fresh_session(session_store(deps, target), data.session_key)
        if not may_clear_notes(asked):
            return SHARED_NOTES_KEPT
        now = asked.ctx.now().astimezone(ZoneInfo(deps.settings.agent_timezone))
        cleared = clear_today_notes(deps, target, data.session_key, speaker_of(data), now)
        notes = "today's working notes are cleared" if cleared else "there were no notes today"
        return f"New conversation started; {notes}. The old conversation is kept."

    return asked.once(reset)


def may_clear_notes(asked: _Asked) -> bool:
    """Whether `/reset` may clear today's working notes: always, unless the memory is the
    agent's one for everyone (`AGENT_MEMORY_SCOPE=shared`), whose notes only the owner may
    clear (read in the caller's step)."""
    if asked.deps.settings.agent_memory_scope != "shared":
        return True
    owner = find_owner(asked.deps.settings.agent_owner, redis_records(asked.ctx.runtime).pairing)
    return speaks_as_owner(owner, asked.data.channel_meta.asker)


def _stop(asked: _Asked) -> str:
    ctx = asked.ctx

    def stop() -> str:
        reason = f"stopped by /stop in the chat ({ctx.run_id})"
        turns = stop_turns(ctx.runtime, asked.data.session_key, reason)
        tasks = [task_label(r) for r in stop_tasks(ctx.runtime, asked.data.session_key, reason)]
        return stop_text(bool(turns), tasks)

    return asked.once(stop)


def stop_text(turn: bool, tasks: list[str]) -> str:
    """What `/stop` says it stopped: the running turn and the background tasks, by name."""
    if not turn and not tasks:
        return "Nothing is running in this chat."
    if not tasks:
        return "Stopping."
    what = f"{len(tasks)} background task{'s' if len(tasks) > 1 else ''}: {', '.join(tasks)}"
    return f"Stopping the running turn and {what}." if turn else f"Stopping {what}."


def _status(asked: _Asked) -> str:
    ctx, deps, data, target = asked.ctx, asked.deps, asked.data, asked.target
    if target.is_network:
        answerer, model = f"network {target.name}", "per agent"
    else:  # the profile is read in a step of its own (`run_profile`)
        profile = run_profile(ctx, deps, target.name) or default_profile(deps)
        answerer = profile.name
        model = profile.provider.model if profile.provider is not None else "none configured"

    def status() -> str:
        messages = session_store(deps, target).messages(data.session_key)
        running = [r for r in live_runs(ctx.runtime, data.session_key) if r.id != ctx.run_id]
        state = ChatState(answerer, model, len(messages), estimate_tokens(messages), running)
        today = ctx.now().astimezone(UTC).date()
        rows = redis_records(ctx.runtime).usage.rows(today, today)
        return status_text(state, rows, data.session_key, today)

    return asked.once(status)


def _usage(asked: _Asked) -> str:
    ctx, data = asked.ctx, asked.data

    def usage() -> str:
        records = redis_records(ctx.runtime)
        owner = find_owner(asked.deps.settings.agent_owner, records.pairing)
        today = ctx.now().astimezone(UTC).date()
        rows = records.usage.rows(today - timedelta(days=USAGE_DAYS - 1), today)
        fleet = speaks_as_owner(owner, data.channel_meta.asker)
        return usage_text(rows, data.session_key, today, fleet=fleet)

    return asked.once(usage)


def _pair(asked: _Asked) -> str:
    def pair() -> str:
        pairing = redis_records(asked.ctx.runtime).pairing
        owner = find_owner(asked.deps.settings.agent_owner, pairing)
        if not speaks_as_owner(owner, asked.data.channel_meta.asker):
            return NOT_OWNER
        return pair_text(pairing.pending(), pairing.approved())

    return asked.once(pair)


def _help(asked: _Asked) -> str:
    return help_text()


_ANSWERS: dict[str, Callable[[_Asked], str]] = {
    "new": _new,
    "reset": _reset,
    "stop": _stop,
    "status": _status,
    "usage": _usage,
    "pair": _pair,
    "help": _help,
}
