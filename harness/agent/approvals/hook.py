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

Every decision here is a step or derived from what steps returned, so a replay of a run
recorded before this was a hook sees the same steps in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.agent.approvals.gate import PENDING_RESULT, DeferredCall, ask_first
from harness.agent.hooks import Hooks
from harness.agent.tool_paths import resolve_call
from harness.agent.turn import DurableTurn, error_result
from harness.llm.types import Message, ToolCall, ToolResult


class ApprovalHook(Hooks):
    """The approval gate, taint and resolved paths of one durable turn (see the module
    docstring). `deferred` holds the calls whose request still stands."""

    def __init__(self, turn: DurableTurn) -> None:
        self.turn = turn
        self.deferred: list[DeferredCall] = []

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
            tainted_by=turn.taint.source,
        )
        turn.arrived.extend(gate.arrived)
        if gate.pending is not None:  # the person wrote meanwhile: the request still stands
            self.deferred.append(DeferredCall(resolved, gate.pending, gate.deadline_ms))
            return ToolResult(tool_call_id=resolved.id, content=PENDING_RESULT)
        if gate.refusal is not None:
            return error_result(resolved, gate.refusal)
        return resolved
