"""What the agent's own-task tools (`functions_list`, `function_run`, `runs_show`) may reach.

The agent sees and runs only the functions the sidecar loaded from the workspace's
`functions/` (the file source, `harness.runtime.function_sources`): the fleet's functions
trust their event's data, so invoking one with agent-written data could speak or answer in a
person's name. Of runs it sees those of its own functions and those of its own chat (the
turns, sub-agents and their tools' steps of this session), but never a run of another chat:
not its turns, nor a run of a workspace function that another chat's turn started (its data
came from that chat).

The registry tools get the runtime and the chat's session key through `ToolContext.extras`
(`RUNTIME`, `SESSION_KEY`), set by the agent's turn.
"""

from __future__ import annotations

from harness.runtime import Runtime
from harness.runtime.ledger import RunRecord
from harness.runtime.sessions import session_of
from harness.tools.base import ToolContext
from harness.tools.errors import ToolError

RUNTIME = "runtime"
"""The `ToolContext.extras` key of the run's `Runtime`."""
SESSION_KEY = "session_key"
"""The `ToolContext.extras` key of the chat's session key ("" or absent: no chat)."""


def runtime_of(ctx: ToolContext) -> Runtime:
    """The runtime the turn handed its tools. Raises `ToolError` outside an agent's turn."""
    runtime = ctx.extras.get(RUNTIME)
    if not isinstance(runtime, Runtime):
        raise ToolError("this tool works only inside the agent's turn (no runtime was given)")
    return runtime


def session_of_ctx(ctx: ToolContext) -> str:
    """The session key of the chat the tool is called in; "" when there is none."""
    return str(ctx.extras.get(SESSION_KEY) or "")


def run_refusal(
    runtime: Runtime, record: RunRecord, own_ids: set[str], session_key: str
) -> str | None:
    """Why the agent of chat `session_key` may not read `record`, or None when it may (see
    the module). `own_ids` are the workspace function ids. Raises on Redis errors."""
    session = session_of(record.event)
    if session:
        if session == session_key:
            return None
        return f"run {record.id} belongs to another chat"
    if record.function_id not in own_ids:
        return (
            f"run {record.id} is of {record.function_id!r}, not a function of your "
            "functions/ folder nor a run of this chat"
        )
    if record.parent is not None:
        parent = runtime.ledger.run(record.parent.run_id)
        started_in = session_of(parent.event) if parent is not None else ""
        if started_in and started_in != session_key:
            return f"run {record.id} was started by another chat's turn"
    return None
