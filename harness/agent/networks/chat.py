"""A chat bound to a network: its turn hands the chat's message to the network and answers
with the network's answer.

    text, iterations = network_turn(ctx, deps, "triage", data, text, ask_in=chat, post=send)

The chat turn (`agent-handle-message`) stays the chat's one run (its singleton) and invokes
`agent-network` as a durable child (`ctx.step.invoke`) with the message as the task and no
`reply`, so the network does not post: the turn posts, once. The network's agents ask their
approvals in the chat (`ask_in`). Each exchange is kept in the network's own transcript of the
chat (`SessionStore.for_network`), apart from every agent's. Messages that arrive while the
network runs (`ON_NEW_MESSAGE=steer`) are its next task, once it has answered, so none is
dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.agent.session import SessionLine
from harness.errors import StepFailedError
from harness.events import NETWORK_HANDLER, MessageReceived, NetworkRun, ReplyTarget
from harness.llm.types import Message

if TYPE_CHECKING:
    from harness.agent.deps import AgentDeps
    from harness.runtime.steps import Context

NETWORK_TIMEOUT = "12h"
"""How long a chat waits for its network's answer. Generous on purpose: a network runs up to 50
agents one after another (each a child run of its own), and the chat's singleton only waits
meanwhile. Past it the chat is told the network did not answer."""


def network_turn(
    ctx: Context,
    deps: AgentDeps,
    network: str,
    data: MessageReceived,
    text: str,
    *,
    ask_in: ReplyTarget,
    post: Callable[[str], None],
) -> tuple[str, int]:
    """Have `network` answer the chat message `data` (whose text, with its attachments'
    notes, is `text`): the final answer and the number of agent turns the network ran.
    Answers to messages that arrived meanwhile and were answered before the last go to `post`;
    the caller posts the one returned. A network that fails or times out answers with a
    sentence saying so. Every step is durable: a replay neither runs the network again nor
    writes the transcript twice."""
    sessions = deps.sessions.for_network(network)
    batch = [(ctx.event.id, text.strip() or "(empty message)")]
    iterations = 0
    while True:
        for event_id, said in batch:
            user = SessionLine(message=Message.user(said), event_id=event_id, run_id=ctx.run_id)
            sessions.append_once(data.session_key, user, key=f"event:{event_id}")
        task = "\n\n".join(said for _, said in batch)
        answer, ran = _ask(ctx, network, task, ask_in)
        iterations += ran
        said_back = SessionLine(message=Message.assistant(answer), run_id=ctx.run_id)
        sessions.append_once(data.session_key, said_back, key=_answer_key(ctx, batch))
        arrived = [(e.id, MessageReceived.from_event(e).message) for e in ctx.step.take_inbox()]
        batch = [(event_id, said.strip()) for event_id, said in arrived if said.strip()]
        if not batch:
            return answer, iterations
        post(answer)


def _ask(ctx: Context, network: str, task: str, ask_in: ReplyTarget) -> tuple[str, int]:
    """The network's answer to `task` (a child run) and how many agents it ran."""
    run = NetworkRun(network=network, task=task, ask_in=ask_in)
    try:
        out = ctx.step.invoke(
            "network", NETWORK_HANDLER, run.model_dump(mode="json", exclude_none=True),
            timeout=NETWORK_TIMEOUT,
        )  # fmt: skip
    except StepFailedError as exc:
        return f"(The network {network!r} did not answer: {exc.error})", 0
    return str(out.get("answer", "")), int(out.get("iterations", 0))


def _answer_key(ctx: Context, batch: list[tuple[str, str]]) -> str:
    """The idempotency key of the answer to the messages of `batch`: one per batch."""
    return f"{ctx.run_id}:answer:{batch[0][0]}"
