"""Approval as a hook of the loop: a call runs on the path it names, once a person said yes.

Before each tool call (`before_tool`), a path-taking call is resolved to the path it really
names (`tool_paths`, a step), then the approval gate decides (`approvals.gate.ask_first`,
steps, a suspension while it waits): the call runs, is refused with the reason as its
result, or is held (`PENDING_RESULT`) when the person wrote something else meanwhile; a held
call is kept in `deferred` for `approvals.deferral` to wait on. Messages the wait took from the
run's inbox go to the turn's `arrived`, for its `steer`.

Taint: before each model call (`before_model`) the hook notes whether what the model is sent
holds outside content (`untrusted.Taint.saw`); a tainted turn's risky calls ask even when the
allowlist or a grant would let them through. The turn's tool steps write into the same
`Taint` (they wrap outside content and note the files the turn wrote).

When the loop runs the calls of a reply as a batch (`DurableTurn.act_batch`), every call is
decided before any runs. A risky call after one that reads outside content (a tool declaring
`outside_content`) in the same reply is still decided as tainted by it, as when each call ran
before the next was decided: the batch keeps the sequential answer (and its steps), erring
on asking when that read would have failed.

Every decision here is a step or derived from what steps returned, so a replay of a run
recorded before this was a hook sees the same steps in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.agent.approvals.gate import PENDING_RESULT, DeferredCall, ask_first
from harness.agent.hooks import Hooks
from harness.agent.tool_paths import resolve_call
from harness.agent.turn import DurableTurn, error_result
from harness.agent.untrusted import source_of
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolResult


class ApprovalHook(Hooks):
    """The approval gate, taint and resolved paths of one durable turn (see the module
    docstring). `deferred` holds the calls whose request still stands."""

    def __init__(self, turn: DurableTurn) -> None:
        self.turn = turn
        self.deferred: list[DeferredCall] = []
        self._batch_taint: str | None = None  # what a call let through in this reply reads

    def after_model(self, turn: AssistantTurn) -> None:
        """A new reply: none of its calls is decided yet."""
        self._batch_taint = None

    def before_model(self, messages: Sequence[Message]) -> None:
        """Note outside content in what the model is sent: it taints the turn."""
        self.turn.taint.saw(messages)

    def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
        """The call on its resolved path, once a person approved it when the policy asks;
        else the refusal, or `PENDING_RESULT` for a request that still stands. Suspends the
        run while it waits."""
        turn = self.turn
        resolved = resolve_call(turn.ctx, turn.deps.workspace, call)
        if isinstance(resolved, str):
            return error_result(call, resolved)
        gate = ask_first(
            turn.ctx,
            turn.deps.settings,
            resolved,
            session_key=turn.session_key,
            reply=turn.ask_in,
            risky=turn.registry.is_risky(resolved.name),
            tainted_by=turn.taint.source or self._batch_taint,
        )
        turn.arrived.extend(gate.arrived)
        if gate.pending is not None:  # the person wrote meanwhile: the request still stands
            self.deferred.append(DeferredCall(resolved, gate.pending, gate.deadline_ms))
            return ToolResult(tool_call_id=resolved.id, content=PENDING_RESULT)
        if gate.refusal is not None:
            return error_result(resolved, gate.refusal)
        if turn.act_batch is not None and turn.registry.carries_outside_content(resolved.name):
            self._batch_taint = self._batch_taint or source_of(
                resolved.name, resolved.arguments, workspace=turn.deps.workspace,
                written=turn.taint.written,
            )  # fmt: skip
        return resolved
