"""An agent turn bound to a durable run: the loop's callables, each a step of the run.

Thinking is `step.run("think")`, each tool call `step.run("tool")`, steering
`step.take_inbox()`, a synchronous delegation `step.invoke`. Every decision that depends on
the session file (the history's length, whether to compact) is a step too, so a replay sees
exactly what the first execution saw even after the file changed; the history's length and
the first decision to compact it are one step. Writes to the session are
idempotent appends keyed by run and sequence number.

What happens around the calls is not decided here but by hooks (`harness.agent.hooks`): the
composition of the turn (`handlers`) passes the loop the approval hook (`approvals.hook`) and
gives the turn the watch hooks its steps call when a call really runs (`status_hook`,
`streaming_hook`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError

from harness.agent.arrival import arrived_meanwhile
from harness.agent.compaction_calls import compacted, compaction_due, summarize
from harness.agent.delegation import (
    DELEGATE_TIMEOUT,
    DELEGATION_TOOLS,
    SUBAGENT_EVENT,
    SUBAGENT_FUNCTION,
    DelegateScheduledParams,
    DelegateTaskParams,
    parse_schedule,
)
from harness.agent.deps import AgentDeps
from harness.agent.hooks import NO_HOOKS, Hooks
from harness.agent.loop import ActAll
from harness.agent.media.attachments import receive, steering_message
from harness.agent.media.send_file import SEND_FILE, send_file
from harness.agent.memory.scope import memory_root
from harness.agent.model_calls import answer_of, draft_for, model_failures, request_for
from harness.agent.named_delegation import NamedDelegation
from harness.agent.roster.profile import AgentProfile, default_profile
from harness.agent.session import SessionLine
from harness.agent.speakers import about, event_speaker, said_by, speaker_of
from harness.agent.system_prompt import build_system_prompt
from harness.agent.untrusted import GUIDANCE, Taint, new_id
from harness.errors import StepFailedError
from harness.events import Event, MessageReceived, ReplyTarget, SubagentTask
from harness.llm.errors import ContextOverflowError
from harness.llm.images import with_image_data
from harness.llm.provider import TextSink
from harness.llm.types import AssistantTurn, Message, SystemBlock, ToolCall, ToolResult, ToolSpec
from harness.runtime.steps import Context
from harness.sidecar.status import function_notes
from harness.tools import TOOL_GUIDELINES
from harness.tools.base import ToolContext, ToolRegistry
from harness.tools.errors import ToolError
from harness.tools.function_run import FUNCTION_RUN, run_function
from harness.tools.function_scope import RUNTIME, SESSION_KEY

log = logging.getLogger(__name__)
PARALLEL_TOOL_CALLS = 4
"""How many plain tool calls of one reply run at once (`DurableTurn.act_all`)."""
# calls `act` runs by steps of their own
_OWN_STEPS = frozenset({*DELEGATION_TOOLS, SEND_FILE, FUNCTION_RUN})
GUIDELINES = f"{TOOL_GUIDELINES}\n{GUIDANCE}"
"""The tools block of the system prompt: constant, so the cached prefix stays byte-stable."""

__all__ = ["DurableTurn", "Guard", "ReplyTarget", "error_result"]
Guard = Callable[[Callable[[], AssistantTurn]], AssistantTurn | None]
"""Runs one model call (a thunk making its step) if the budgets allow it; None if not."""


def _unguarded(call: Callable[[], AssistantTurn]) -> AssistantTurn | None:
    return call()


class DurableTurn:
    """The loop's `think`, `act`, `steer`, `record` and `compact`, bound to one run.
    `hooks` are told when a model or tool call really starts (inside its step). `delegates`
    are the named agents it may call as a step of the run already read them (the chat turn's
    "route"); None to read them in a "roster" step when first needed."""

    def __init__(
        self,
        ctx: Context,
        deps: AgentDeps,
        *,
        registry: ToolRegistry,
        channel: str,
        session_key: str | None,
        reply: ReplyTarget | None,
        hooks: Hooks = NO_HOOKS,
        ask_in: ReplyTarget | None = None,
        profile: AgentProfile | None = None,
        depth: int = 0,
        delegates: dict[str, str] | None = None,
    ) -> None:
        self.ctx = ctx
        # which agent this turn is: its model, limits and instructions (the default agent's
        # when none is given); `registry` is the tools it is offered
        self.profile = profile or default_profile(deps)
        self.hooks = hooks
        self._thinks = 0
        self.ask_in = ask_in or reply  # where approvals are asked (a sub-agent: its parent's)
        self.deps = deps
        self.registry = registry
        self.channel = channel
        self.session_key = session_key
        self.reply = reply
        self._seq = 0
        self._system_chars = 0
        # The prompt `compact` built to size the first call, handed to that call (see `system`)
        self._unsent_system: list[SystemBlock] | None = None
        self.arrived: list[Event] = []  # messages taken while an approval waited, for `steer`
        # whether to compact before the first think, as the "history" step decided; None once
        # used, or when a "compaction-check" step decides it (a run an earlier version began)
        self._first_check: bool | None = None
        # a named agent's transcript and memory in this chat are its own (`for_agent`)
        named = self.profile.name if self.profile.spec is not None else None
        self.sessions = deps.sessions.for_agent(named) if named else deps.sessions
        self.speaker = event_speaker(ctx.event)  # who wrote last (steering changes it)
        where = (deps.workspace, deps.settings.agent_memory_scope, session_key, deps.private)
        self.memory_root = memory_root(*where, named, person=self.speaker)
        self.transcript = self.sessions.path_for(session_key) if session_key else None
        # the outside content this turn has read: its tool steps write it, approval reads it
        self.taint = Taint(deps.workspace)
        # the named agents it may call (`depth`: named delegations above this run; `delegates`:
        # as a step already read them, else read when first needed), and what they spend
        self.named = NamedDelegation(self, depth, delegates)
        # the budget check around a model call made outside `think` (a summary, the memory
        # flush): `budget_gate.gated_think` sets it; None back means a budget is used up
        self.guard: Guard = _unguarded

    # -- context ---------------------------------------------------------------------
    def now(self) -> datetime:
        """The current time in the agent's time zone."""
        return self.ctx.now().astimezone(ZoneInfo(self.deps.settings.agent_timezone))

    def system(self, note: str = "") -> list[SystemBlock]:
        """The system prompt for one call; `note` (a budget warning) joins the volatile tail.

        A prompt `compact` built to size this execution's first call is used by that call,
        once and only without a note; every other call builds its own, so none is older than
        the step that sends it."""
        unsent, self._unsent_system = self._unsent_system, None
        if unsent is not None and not note:
            return unsent
        settings = self.deps.settings
        blocks = build_system_prompt(
            self.deps.workspace,
            agent_name=settings.agent_name if self.profile.spec is None else self.profile.name,
            instructions=self.profile.instructions,
            channel=self.channel,
            now=self.now(),
            tool_guidelines=GUIDELINES,
            tz_name=settings.agent_timezone,
            memory_root=self.memory_root,
            function_notes=function_notes(self.ctx.runtime),
            transcript=self.transcript,
            delegates=self.named.prompt_list(),
        )
        if note:
            blocks[-1] = SystemBlock(text=f"{blocks[-1].text}\n\n{note}", volatile=True)
        self._system_chars = sum(len(b.text) for b in blocks)
        return blocks

    def tool_specs(self) -> list[ToolSpec]:
        """The tools offered to the model: the registry's, then the named delegations'."""
        return self.deps.tool_specs(self.registry) + self.named.specs()

    # -- session ---------------------------------------------------------------------
    def save_user_message(self, event: Event, message: Message | None = None) -> None:
        """Write the message (`agent.message.received`) that started this run to the session,
        once; `message`, when given, is what it became with its attachments. Raises
        `InvalidEventDataError` for an event that is not such a message."""
        data = MessageReceived.from_event(event)
        if self.session_key and (data.message.strip() or message is not None):
            said = said_by(data, message or Message.user(data.message.strip()))
            line = SessionLine(message=said, event_id=event.id, run_id=self.ctx.run_id)
            self.sessions.append_once(self.session_key, line, key=f"event:{event.id}")

    def load_history(self, fallback_text: str) -> list[Message]:
        """The conversation so far, as the first execution of this run saw it. Its length and
        whether to compact it before the first think are one step ("history"), which a
        replay reads back; a length recorded alone (by an earlier version) leaves that first
        decision to its own "compaction-check" step, as then."""
        if not self.session_key:
            return [Message.user(fallback_text)]
        store, key = self.sessions, self.session_key
        self.named.agents()  # the prompt sized in the step lists them: read in no step's function
        read: list[list[Message]] = []

        def opened() -> dict[str, Any]:
            count = store.count(key)
            history = store.messages(key, upto=count) or [Message.user(fallback_text)]
            read.append(history)
            configured = self.profile.provider is not None
            return {"count": count, "compact": configured and compaction_due(self, history)}

        recorded = self.ctx.step.run("history", opened)
        if isinstance(recorded, int):  # the length alone, from an earlier version
            count, self._first_check = recorded, None
        else:
            count, self._first_check = int(recorded["count"]), bool(recorded["compact"])
        if read:  # this execution read it in the step
            return read[0]
        return store.messages(key, upto=count) or [Message.user(fallback_text)]

    def record(self, message: Message) -> None:
        """Append a message of this run to the session (idempotent across replays)."""
        self._seq += 1
        if self.session_key:
            line = SessionLine(message=message, run_id=self.ctx.run_id)
            self.sessions.append_once(self.session_key, line, key=f"{self.ctx.run_id}:{self._seq}")

    def compact(self, conversation: list[Message], forced: bool) -> list[Message]:
        """Summarise the older part of the session when it nears the context limit (or when
        `forced` after an overflow); returns the conversation to continue with."""
        if not self.session_key or self.profile.provider is None:
            return conversation
        if forced or self._first_check is None:
            decide = partial(compaction_due, self, conversation, forced)  # no args: no preview
            due = self.ctx.step.run("compaction-check", decide)
        else:  # the first decision of this conversation, made in its "history" step
            due, self._first_check = self._first_check, None
        if not due:
            return conversation
        self._unsent_system = None  # the memory flush may change what it shows
        return compacted(self, conversation, key=f"compaction:{self.ctx.run_id}:{self._seq}")

    def prompt_chars(self) -> int:
        """The size of the system prompt this execution sends next: built, and kept for the
        next think, when none was built yet (`_unsent_system`)."""
        if not self._system_chars:
            self._unsent_system = self.system()
        return self._system_chars

    def extras(self) -> dict[str, object]:
        """What this turn's tools get beside their arguments (`ToolContext.extras`)."""
        where = {RUNTIME: self.ctx.runtime, SESSION_KEY: self.session_key or ""}
        return {"now": self.now, "memory_root": self.memory_root, **about(self.speaker), **where}

    def summarize(self, transcript: str, step: str = "summarize") -> str | None:
        """`transcript` summarised by one model call in step `step`, behind the budget guard;
        None when a budget is used up (`compaction_calls.summarize`)."""
        return summarize(self, transcript, step)

    # -- model -----------------------------------------------------------------------
    def think(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], note: str
    ) -> AssistantTurn:
        """One model call as a durable step. Transient errors are retried by the step (the
        fallback model takes over from the third attempt); an overflow is raised as
        `ContextOverflowError` so the loop can compact and try again. The hooks get the text
        as it streams (not durable; a replay passes nothing on)."""
        self._thinks += 1
        self.named.agents()  # read (a step) before the think step builds the prompt from it
        try:
            raw = self.ctx.step.run("think", self._think_once, list(messages), list(tools), note)
        except StepFailedError as exc:
            if exc.error.startswith(ContextOverflowError.__name__):
                raise ContextOverflowError(exc.error) from exc
            raise
        finally:
            self._unsent_system = None  # a replayed think did not use it; the next call builds
        return AssistantTurn.model_validate(raw)

    def _think_once(
        self, messages: list[Message], tools: list[ToolSpec], note: str
    ) -> dict[str, Any]:
        if self.deps.settings.model_calls == "gateway":
            settled = self.ctx.step.offload_outcome()
            if settled is not None:
                # the replay that resumes after an offloaded call: its start was announced
                # and its request recorded before, so neither is built again
                with model_failures(self.ctx, self.deps.settings.agent_model_retry_for):
                    return answer_of(settled).model_dump(mode="json")
        on_text = self.hooks.model_started(self._thinks, self.ctx.attempt)
        try:
            messages = with_image_data(messages, self.deps.workspace)
            choice = self.profile.tool_choice_for(tools)
            turn = self.complete(self.system(note), messages, tools, on_text, choice)
        finally:
            self.hooks.model_ended()
        return turn.model_dump(mode="json")

    def complete(
        self,
        system: list[SystemBlock] | str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_text: TextSink | None = None,
        tool_choice: str | None = None,
    ) -> AssistantTurn:
        """One call of the profile's model (the fallback's from the third attempt); call it
        in a step, behind `guard` when not through `think`."""
        provider = self.profile.provider_for(self.ctx.attempt)
        with model_failures(self.ctx, self.deps.settings.agent_model_retry_for):
            if self.deps.settings.model_calls == "gateway":  # the run parks, no thread waits
                stream = (self.reply, self.deps.settings.stream_replies, self._thinks)
                draft = draft_for(on_text, *stream, self.ctx.attempt)
                call = (system, messages, tools, tool_choice)
                return request_for(self.ctx.step, self.ctx.run_id, provider, call, draft)
            return provider.complete(
                system=system,
                messages=messages,
                tools=tools,
                cancel=self.ctx.cancelled,
                on_text=on_text,
                tool_choice=tool_choice,
            )

    # -- tools -----------------------------------------------------------------------
    def act(self, call: ToolCall) -> ToolResult:
        """Run one tool call durably, without asking: the loop's hooks decided it may run
        (`approvals.hook`). Every failure becomes an error result for the model."""
        if call.name in DELEGATION_TOOLS:
            return self._delegate(call)
        if self.named.handles(call.name):
            return self.named.run(call)
        if call.name == SEND_FILE:
            max_bytes = self.deps.settings.media_max_bytes
            # a sub-agent sends into its parent's chat, where it would ask for approval
            return send_file(self.ctx, self.deps.workspace, self.ask_in, call, max_bytes)
        if call.name == FUNCTION_RUN:
            policy, workspace = self.deps.settings.dm_policy, self.deps.workspace
            text, failed = run_function(self.ctx, call.arguments, policy, workspace)
            return ToolResult(tool_call_id=call.id, content=text, is_error=failed)
        return self._ran(call, self.ctx.step.run("tool", self._execute, call))

    @property
    def act_batch(self) -> ActAll | None:
        """The loop's `act_all`: `act_all`, or None (each call hooked and run in turn) when
        AGENT_PARALLEL_TOOLS is off."""
        return self.act_all if self.deps.settings.agent_parallel_tools else None

    def act_all(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run the calls of one reply that the loop's hooks let through, durably; results in
        call order. Plain tool calls run at once (at most `PARALLEL_TOOL_CALLS`), each a "tool"
        step on a key taken in call order (the one `act` in turn would take); delegations and
        send_file then run one by one. Every failure is an error result for the model."""
        own = self.named.handles
        plain = [i for i, c in enumerate(calls) if c.name not in _OWN_STEPS and not own(c.name)]
        work = [(calls[i],) for i in plain]
        found = self.ctx.step.run_all("tool", self._execute, work, workers=PARALLEL_TOOL_CALLS)
        ran = dict(zip(plain, found, strict=True))
        return [self._ran(c, ran[i]) if i in ran else self.act(c) for i, c in enumerate(calls)]

    def _ran(self, call: ToolCall, raw: dict[str, Any] | StepFailedError) -> ToolResult:
        """The model's result of a recorded tool step; notes what it read or wrote. The
        step's structured part, if any, stays in the journal."""
        if isinstance(raw, StepFailedError):
            return error_result(call, f"the tool failed: {raw.error}")
        self.taint.ran(call.name, call.arguments, raw)
        return ToolResult(tool_call_id=call.id, content=raw["content"], is_error=raw["is_error"])

    def _execute(self, call: ToolCall) -> dict[str, Any]:
        self.hooks.tool_started(call)
        name, arguments = call.name, call.arguments
        tool_ctx = ToolContext(
            workspace=self.deps.workspace,
            cancel=self.ctx.cancelled,
            allow_shell=self.deps.settings.agent_allow_shell,
            transcript=self.transcript,
            extras=self.extras(),
        )
        outcome = self.registry.execute(name, arguments, tool_ctx)
        if not outcome.is_error and self.registry.carries_outside_content(name):
            raw = self.taint.mark(name, arguments, outcome.content)  # wrapped in the step
        else:
            raw = {"content": outcome.content, "is_error": outcome.is_error}
        if outcome.structured is not None:  # kept in the step (`runs show`), not sent
            raw["structured"] = outcome.structured
        return raw

    def _delegate(self, call: ToolCall) -> ToolResult:
        scheduled = call.name == "delegate_scheduled_task"
        try:
            model = DelegateScheduledParams if scheduled else DelegateTaskParams
            params = model.model_validate(call.arguments)
        except ValidationError as exc:
            return error_result(
                call, f"invalid arguments for {call.name}: {exc.errors()[0]['msg']}"
            )
        if call.name == "delegate_task":
            try:
                task = SubagentTask(task=params.task, ask_in=self.ask_in)
                result = self.ctx.step.invoke(
                    "delegate",
                    SUBAGENT_FUNCTION,
                    task.model_dump(mode="json", exclude_none=True),
                    timeout=DELEGATE_TIMEOUT,
                )
            except StepFailedError as exc:
                return error_result(call, f"the sub-agent failed: {exc.error}")
            answer = self.taint.subagent_answer(
                str(result.get("answer", "")),
                result.get("read_outside"),
                lambda: self.ctx.step.run("untrusted-id", new_id),
            )
            return ToolResult(tool_call_id=call.id, content=answer)
        task = SubagentTask(task=params.task, reply=self.reply)
        if isinstance(params, DelegateScheduledParams):
            checked = self.ctx.step.run("schedule", self._check_schedule, params.scheduled_for)
            if "error" in checked:
                return error_result(call, checked["error"])
            task = task.model_copy(update={"scheduled_for": checked["at"]})
        data = task.model_dump(mode="json")
        self.ctx.step.send_event("delegate", {"name": SUBAGENT_EVENT, "data": data})
        when = f" at {task.scheduled_for}" if task.scheduled_for else ""
        return ToolResult(
            tool_call_id=call.id,
            content=f"Started a sub-agent{when}; it will send its result to the user itself.",
        )

    def _check_schedule(self, value: str) -> dict[str, str]:
        try:
            return {"at": parse_schedule(value, self.now()).isoformat()}
        except ToolError as exc:
            return {"error": str(exc)}

    # -- steering --------------------------------------------------------------------
    def steer(self) -> list[Message]:
        """Messages of this chat that arrived while the run was active (the loop records them),
        those an approval's wait took first included."""
        inbox = [*self.arrived, *self.ctx.step.take_inbox()]
        self.arrived.clear()
        settings, workspace = self.deps.settings, self.deps.workspace
        taken = [MessageReceived.from_event(e) for e in inbox]
        arrived_meanwhile(self.ctx, taken, settings.dm_policy)
        messages = []
        for data in taken:
            self.speaker = speaker_of(data) or self.speaker  # a later note is about them
            if data.attachments:  # files sent mid-turn are fetched too, never dropped
                said = steering_message(receive(self.ctx, data, settings, workspace))
                messages.append(said_by(data, said))
            elif data.message.strip():
                messages.append(said_by(data, Message.user(data.message.strip())))
        return messages


def error_result(call: ToolCall, text: str) -> ToolResult:
    """The error result that answers `call` with `text` instead of running it."""
    return ToolResult(tool_call_id=call.id, content=text, is_error=True)
