"""The background tasks a turn started (`delegate_to_<agent>` with `background`): their state,
waiting for their answer, stopping them (`task_status`, `task_wait`, `task_cancel`).

A task id is the child's run id, so its state is its run record (`Ledger.run`): queued or
working is "running", then completed (with its answer), failed or cancelled. Only a task this
conversation started may be touched: one whose parent is this run, or whose `parent_session`
is this turn's chat session; any other id reads as unknown (whether it exists is not told).
Each read is a durable step, so a replay sees what the first execution saw.

`task_wait` reads the record (is the task ours, has it ended?), then waits for the child's run
to end (`step.wait_for_run`) and reads the record again. A child that ends between the first
read and the wait is seen at once: the engine checks whether the run has ended in the same
atomic step that registers the wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harness.agent.delegation import (
    SUBAGENT_FUNCTION,
    TASK_CANCEL,
    TASK_STATUS,
    TaskIdParams,
    TaskWaitParams,
)
from harness.llm.types import ToolCall, ToolResult
from harness.runtime.kicker import kick_all
from harness.runtime.ledger import RunRecord

if TYPE_CHECKING:
    from harness.agent.named_delegation import NamedDelegation
    from harness.agent.turn import DurableTurn

ENDED = frozenset({"completed", "failed", "cancelled"})


class BackgroundTasks:
    """The task tools of one turn; `named` holds the spend the turn adds up."""

    def __init__(self, turn: DurableTurn, named: NamedDelegation) -> None:
        self.turn = turn
        self.named = named

    def run(self, call: ToolCall) -> ToolResult:
        """Run a task tool call durably; every failure is an error result."""
        try:
            model = TaskIdParams if call.name in (TASK_STATUS, TASK_CANCEL) else TaskWaitParams
            params = model.model_validate(call.arguments)
        except ValidationError as exc:
            return _result(call, f"invalid arguments for {call.name}: {exc.errors()[0]['msg']}")
        task_id = params.task_id
        if call.name == TASK_CANCEL:
            return self._cancel(call, task_id)
        if isinstance(params, TaskWaitParams):
            state = self._state(task_id)
            if state["status"] != "running":
                return self._report(call, task_id, state)
            # wait first, then read: an end after the read above is seen by the wait itself
            self.turn.ctx.step.wait_for_run("task-wait", task_id, timeout=params.timeout)
            state = self._state(task_id)
            if state["status"] == "running":
                return _result(call, f"task {task_id} is still running after {params.timeout}",
                               False)  # fmt: skip
        else:
            state = self._state(task_id)
        return self._report(call, task_id, state)

    def _state(self, task_id: str) -> dict[str, Any]:
        runtime, ours = self.turn.ctx.runtime, self._ours

        def read() -> dict[str, Any]:
            record = runtime.ledger.run(task_id)
            return task_state(record) if record is not None and ours(record) else _UNKNOWN

        state: dict[str, Any] = self.turn.ctx.step.run("task-status", read)
        return state

    def _cancel(self, call: ToolCall, task_id: str) -> ToolResult:
        runtime, ours, run_id = self.turn.ctx.runtime, self._ours, self.turn.ctx.run_id

        def cancel() -> dict[str, Any]:
            record = runtime.ledger.run(task_id)
            if record is None or not ours(record):
                return _UNKNOWN
            reason = f"cancelled by its parent run {run_id}"
            live, kicks = runtime.ledger.request_cancel(task_id, reason, runtime.now_ms())
            kick_all(runtime.kicker, kicks)
            return {**task_state(record), "asked": live}

        state: dict[str, Any] = self.turn.ctx.step.run("task-cancel", cancel)
        if state["status"] == "unknown":
            return self._report(call, task_id, state)
        if state.get("asked"):
            return _result(call, f"task {task_id} will stop at its next step", False)
        return _result(call, f"task {task_id} had already ended ({state['status']})", False)

    def _report(self, call: ToolCall, task_id: str, state: dict[str, Any]) -> ToolResult:
        status = state["status"]
        if status == "unknown":
            return _result(call, f"no task {task_id!r} started in this conversation")
        if status == "completed":
            self.named.count_cost(task_id, state)
            answer = self.named.answer(str(state.get("answer", "")), state.get("read_outside"))
            return _result(call, f"task {task_id} completed. Its answer:\n\n{answer}", False)
        if status == "failed":
            self.named.count_cost(task_id, state)
            return _result(call, f"task {task_id} failed: {state.get('error', '')}", False)
        return _result(call, f"task {task_id} is {status}", False)

    def _ours(self, record: RunRecord) -> bool:
        """True when this conversation started the task: this run, or this chat session."""
        if record.function_id != SUBAGENT_FUNCTION:
            return False
        if record.parent is not None and record.parent.run_id == self.turn.ctx.run_id:
            return True
        data = record.event.get("data")
        session = data.get("parent_session") if isinstance(data, dict) else None
        return bool(self.turn.session_key) and session == self.turn.session_key


_UNKNOWN: dict[str, Any] = {"status": "unknown"}


def task_state(record: RunRecord) -> dict[str, Any]:
    """A task's state from its run record: `status` (running, completed, failed, cancelled),
    and, once ended, its `answer` or `error` and its spend. Pure."""
    if record.status not in ENDED:
        return {"status": "running"}
    if record.status == "completed":
        result = record.result if isinstance(record.result, dict) else {}
        return {
            "status": "completed",
            "answer": str(result.get("answer", "")),
            "read_outside": result.get("read_outside"),
            "cost_usd": result.get("cost_usd", 0.0),
            "children_cost_usd": result.get("children_cost_usd", 0.0),
        }
    return {"status": record.status, "error": record.error}


def _result(call: ToolCall, text: str, is_error: bool = True) -> ToolResult:
    return ToolResult(tool_call_id=call.id, content=text, is_error=is_error)
