"""The agent's functions on the bus: `agent-handle-message` and `agent-sub-agent`.

Workers load this module by default. The singleton mode of the chat function comes from
`ON_NEW_MESSAGE`, read when the module is imported (worker start).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from harness.agent.approvals.deferral import settle_deferred
from harness.agent.approvals.hook import ApprovalHook
from harness.agent.arrival import arrive
from harness.agent.budget_gate import gated_think
from harness.agent.chat_entry import admitted, bound_turn
from harness.agent.delegation import SUBAGENT_EVENT, SUBAGENT_FUNCTION
from harness.agent.deps import agent_deps
from harness.agent.drafting import live_turn
from harness.agent.hooks import HookChain
from harness.agent.live_text import LiveText
from harness.agent.loop import Think, run_agent_loop
from harness.agent.media.albums import gather_album
from harness.agent.media.attachments import receive
from harness.agent.networks.chat import network_turn
from harness.agent.networks.state import SharedStateTools
from harness.agent.proactive import Source, send_reply
from harness.agent.rate_gate import within_rate
from harness.agent.roster.profile import run_profile
from harness.agent.speakers import person_of, person_subject
from harness.agent.status_hook import StatusLine
from harness.agent.streaming_hook import StreamedText
from harness.agent.structured_answer import (
    StructuredAnswerError,
    schema_instruction,
    schema_problem,
    structured_answer,
)
from harness.agent.task_endings import task_finished
from harness.agent.turn import DurableTurn
from harness.agent.user_hooks import hooks_for
from harness.agent.workspace_hooks import workspace_hooks
from harness.events import (
    MESSAGE_HANDLER,
    MESSAGE_RECEIVED,
    MessageReceived,
    ReplyTarget,
    SubagentTask,
    is_system_session,
)
from harness.events.commands import ORDINARY_MESSAGE
from harness.llm.types import Message
from harness.runtime import Context, Singleton, event, function
from harness.settings import get_settings

log = logging.getLogger(__name__)

HANDLE_MESSAGE = MESSAGE_HANDLER
NOT_CONFIGURED_REPLY = (
    "I can't think yet: no model is configured. Set ANTHROPIC_API_KEY (default provider), "
    "or LLM_PROVIDER=openai with OPENAI_API_KEY, or OPENAI_BASE_URL for a local "
    "OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio). Put it in `.env` in the "
    "folder you run `harness up` from (or export it there), then stop `harness up` (Ctrl-C) "
    "and start it again: settings are read once, when each process starts."
)


@function(
    id=HANDLE_MESSAGE,
    # a chat command is answered beside the turn, never queued behind it (`chat_commands`)
    trigger=event(MESSAGE_RECEIVED, if_=ORDINARY_MESSAGE),
    retries=3,
    singleton=Singleton(key="event.data.session_key", mode=get_settings().on_new_message),
)
def handle_message(ctx: Context) -> dict[str, Any]:
    """Answer a chat message as the agent bound to the chat (`roster.bindings`; the default
    agent when none is): send its chat's undelivered replies again and show the person the
    message arrived (`arrival`), load its session, run the loop, publish `agent.reply.ready`.
    A chat bound to a network has the network answer instead (`networks.chat`)."""
    deps = agent_deps()
    data = MessageReceived.from_event(ctx.event)
    arrive(ctx, data, deps.settings.dm_policy)
    if not admitted(ctx, data, deps.settings.dm_policy):
        return {"reply": None, "iterations": 0, "served": False}
    target = ReplyTarget(
        channel=data.channel,
        destination=data.destination,
        channel_meta=data.channel_meta,
        session_key=data.session_key,
    )
    if not within_rate(ctx, deps.settings, data, target):
        return {"reply": None, "iterations": 0, "served": False}
    data = gather_album(ctx, data)
    received = receive(ctx, data, deps.settings, deps.workspace) if data.attachments else None
    if received is not None and received.notice:
        send_reply(ctx, received.notice, target)  # what could not be used, said once
    if received is not None and received.message is None:
        return {"reply": received.notice, "iterations": 0}
    first = received.message if received is not None else None
    bound = bound_turn(ctx, deps, data)
    # a function's own session answers into a person's chat: what it says joins that chat
    source = _system_source(data)
    if bound.target.is_network:
        name = bound.target.name
        text = first.text if first is not None else data.message
        post = partial(send_reply, ctx, target=target, source=source)
        reply, ran = network_turn(ctx, deps, name, data, text, ask_in=target, post=post)
        send_reply(ctx, reply, target, source=source)
        return {"reply": reply, "iterations": ran, "network": name}
    profile = bound.profile(ctx, deps)
    with live_turn(ctx, deps.settings, target) as live:
        turn = DurableTurn(
            ctx,
            deps,
            registry=profile.tools,
            channel=data.channel,
            session_key=data.session_key,
            reply=target,
            hooks=_watchers(ctx, data.session_key, live),
            profile=profile,
            delegates=bound.delegates,
        )
        reply, iterations = _answer(turn, data, first)
    send_reply(ctx, reply, turn.reply, source=source)
    return {"reply": reply, "iterations": iterations, **_children_cost(turn)}


def _system_source(data: MessageReceived) -> Source | None:
    """`"system"` for a turn of a function's own session, whose replies are proactive in the
    chat they reach (`proactive`); None for a person's chat, whose turn records its own."""
    return "system" if is_system_session(data.session_key) else None


def _children_cost(turn: DurableTurn) -> dict[str, float]:
    """`children_cost_usd` for the run's output, when the turn's delegations spent any."""
    spent = turn.named.children_cost_usd
    return {"children_cost_usd": round(spent, 6)} if spent else {}


def _watchers(ctx: Context, session_key: str | None, live: LiveText | None) -> HookChain:
    """The watch hooks of a chat turn: the status line, then the streamed text (if any)."""
    if live is None:
        return HookChain(StatusLine(ctx, session_key, None))
    return HookChain(StatusLine(ctx, session_key, live), StreamedText(live))


def _answer(turn: DurableTurn, data: MessageReceived, first: Message | None) -> tuple[str, int]:
    """The loop over the turn's callables and hooks (the workspace's hooks when enabled, then
    approval, then the plug-ins' hooks, then the turn's watch hooks): the reply text and the
    number of iterations. `first` is the user's message with its attachments, when it had
    any."""
    turn.save_user_message(turn.ctx.event, first)
    if turn.profile.provider is None:
        return NOT_CONFIGURED_REPLY, 0
    fallback = first.text if first else data.message or "(empty message)"
    approvals = ApprovalHook(turn)
    # the workspace's hooks come first: approval decides on the call as they changed it
    ahead = workspace_hooks(turn)
    hooks = HookChain(*ahead, approvals, *hooks_for(turn), turn.hooks)
    think = gated_think(turn, data.session_key, person_of(data))
    iterations = 0
    while True:
        outcome = run_agent_loop(
            turn.load_history(fallback),
            turn.tool_specs,
            think=think,
            act=turn.act,
            steer=turn.steer,
            record=turn.record,
            compact=turn.compact,
            hooks=hooks,
            max_iterations=turn.profile.max_turns,
            act_all=turn.act_batch,
        )
        iterations += outcome.iterations
        if not approvals.deferred:
            return outcome.text, iterations
        # an approval still stands: say what the model said meanwhile, then wait on for it
        send_reply(turn.ctx, outcome.text, turn.reply, source=_system_source(data))
        while not settle_deferred(approvals):  # each round is a durable wait, not a spin
            pass


@function(id=SUBAGENT_FUNCTION, trigger=event(SUBAGENT_EVENT), retries=1)
def run_subagent(ctx: Context) -> dict[str, Any]:
    """A sub-agent: a fresh conversation on one task, with file tools, remember and web_fetch.

    Invoked (`delegate_task`, `delegate_to_<agent>`) it returns its answer and its spend;
    spawned by event (async or scheduled delegation) it sends the answer to the user itself;
    started in the background (`background`) it publishes `agent.task.finished` when it
    completes (a failure or a cancel is told by `agent-task-ended`). Either way
    the event's data is a `SubagentTask`; other data fails the run at once
    (`InvalidEventDataError`). A named agent with an `output_schema` answers JSON valid
    against it, or the run fails (`StructuredAnswerError`) after one correction; a schema in
    the task's `output_schema` (a function's `run_agent`) wins over the file's. An unknown
    agent's answer says so, and its output has `no_agent`.
    """
    deps = agent_deps()
    data = SubagentTask.from_event(ctx.event)
    task = data.task.strip() or "(no task given)"
    if data.scheduled_for:
        ctx.step.sleep_until("scheduled", data.scheduled_for)
    reply = data.reply
    # its answer is sent outside the chat's turn, so it joins the chat's transcript
    source: Source = "scheduled" if data.scheduled_for else "subagent"
    profile = run_profile(ctx, deps, data.agent) if data.agent else None
    if data.agent and profile is None:
        missing = f"(There is no agent named {data.agent!r}.)"
        send_reply(ctx, missing, reply, source=source)
        return {"answer": missing, "read_outside": None, "no_agent": True}
    turn = DurableTurn(
        ctx,
        deps,
        registry=profile.tools if profile is not None else deps.subagent_tools,
        channel=reply.channel if reply else "subagent",
        session_key=None,
        reply=reply,
        ask_in=data.ask_in,
        profile=profile,
        depth=data.depth,
    )
    # an agent of a network also reads and writes the network's state (`networks.state`)
    shared = SharedStateTools(ctx, data.network_state) if data.network_state else None
    schema = _output_schema(data, turn)
    if schema is not None:
        task = f"{task}\n\n{schema_instruction(schema)}"
    if turn.profile.provider is None:
        answer, cost = NOT_CONFIGURED_REPLY, 0.0
    else:
        think = gated_think(turn, *_chat_and_person(data))  # the correction too
        outcome = run_agent_loop(
            [Message.user(task)],
            shared.offered(turn.tool_specs) if shared else turn.tool_specs,
            think=think,
            act=shared.act(turn.act) if shared else turn.act,
            steer=lambda: [],
            record=turn.record,
            # asks in the parent's chat; never streams
            hooks=HookChain(
                *workspace_hooks(turn),
                ApprovalHook(turn),
                *hooks_for(turn),
            ),
            max_iterations=turn.profile.max_turns,
            # a batch would bypass the state tools' `act`: a network's agent acts in turn
            act_all=None if shared else turn.act_batch,
        )
        answer, cost = outcome.text, outcome.cost_usd
        if schema is not None:
            answer, cost = _structured(turn, think, task, answer, cost, schema)
    if reply is not None:
        send_reply(ctx, answer, reply, source=source)
    # the parent marks the answer as outside content when the sub-agent read some
    done: dict[str, Any] = {"answer": answer, "read_outside": turn.taint.source,
            "cost_usd": cost, "children_cost_usd": turn.named.children_cost_usd}  # fmt: skip
    if shared is not None:
        done["state_updates"] = [u.model_dump(mode="json") for u in shared.updates]
    if data.background:  # its failure or cancel is told by `agent-task-ended`
        task_finished(ctx, data, answer=answer, cost=cost + turn.named.children_cost_usd,
                      read_outside=turn.taint.source)  # fmt: skip
    return done


def _chat_and_person(data: SubagentTask) -> tuple[str | None, str | None]:
    """The chat a sub-agent works for and the person whose message started it (its spend
    counts toward both; None when unknown): from where it answers, else where it asks."""
    where = data.reply or data.ask_in
    if where is None:
        return None, None
    return where.session_key, person_subject(where.channel_meta.asker)


def _output_schema(data: SubagentTask, turn: DurableTurn) -> dict[str, Any] | None:
    """The schema the answer must fit: the caller's (`run_agent(output=...)`) over the agent
    file's; None when neither gives one."""
    if data.output_schema is not None:
        problem = schema_problem(data.output_schema)
        if problem is not None:  # before any model call: no answer could be checked
            raise StructuredAnswerError(f"the output schema it was given is not valid: {problem}")
        return data.output_schema
    return turn.profile.spec.output_schema if turn.profile.spec is not None else None


def _structured(
    turn: DurableTurn, think: Think, task: str, answer: str, cost: float, schema: Any
) -> tuple[str, float]:
    """The answer as JSON valid against `schema` and the spend with the correction's; raises
    `StructuredAnswerError` (the run fails) when the correction does not fit either."""
    valid, retry = structured_answer(think, task, answer, schema)
    return valid, cost + (retry.cost_usd if retry is not None else 0.0)
