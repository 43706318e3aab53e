"""Asking an agent from a durable function: typed results for cron jobs and event handlers.

    from pydantic import BaseModel
    from harness.agent.api import run_agent, run_network
    from harness.runtime import cron, function

    class Summary(BaseModel):
        headline: str
        open_issues: int

    @function(id="nightly-summary", trigger=cron("0 6 * * *"))
    def nightly(ctx):
        summary = run_agent(ctx, "reporter", "Summarise yesterday.", output=Summary)
        ...  # summary is a Summary: publish it, write it to a file

`run_agent` is a durable child run of the sub-agent function (`ctx.step.invoke` of
`agent-sub-agent`): a worker that dies meanwhile does not start the agent twice, and the
function gets one answer. With `output`, the child is told the model's JSON Schema and its
answer is checked against it (one correction, then a failure: `structured_answer`); the
function gets a validated instance of the model. `output` wins over the agent file's own
`output_schema`. Without it, the answer's text.

The calls are plain functions, not coroutines: functions on the engine are synchronous, and a
`step.invoke` does not hold the worker while the agent works (the run is suspended and resumed
with the answer), so there is nothing to `await`.

Who is asked: the owner. The child has no chat, so a risky tool call follows
`AGENT_APPROVAL_UNATTENDED`: by default (`ask`) the request goes to the owner's direct chat and
the child (and so the function) waits for the answer (`approvals.owner_request`); refused
when no owner is known, or with `deny`. It has the tools its file allows and no more.
In a workspace function (the sidecar) the same calls work: the sidecar's invoke policy lets
them through with only these fields (`harness.sidecar.invoke_policy`).

Failures raise `AgentRunError` (the agent failed, timed out or does not exist) or
`AgentAnswerError` (its answer cannot fit `output`); both fail the function's run at once,
since the child's end is journaled and a retry would replay it. Catch one and call again for
another try: each call is a new child run.

`network` (`@network`, from `harness.agent.networks.declare`) declares a network with a
Python router and pydantic-typed state from a file of `functions/`; `run_network` runs it
like a network file's.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, overload

from pydantic import BaseModel, ValidationError

from harness.agent.networks.declare import network
from harness.agent.structured_answer import StructuredAnswerError
from harness.errors import AgentAnswerError, AgentRunError, StepFailedError
from harness.events import NETWORK_HANDLER, SUBAGENT_HANDLER, NetworkRun, SubagentTask

M = TypeVar("M", bound=BaseModel)
DEFAULT_TIMEOUT = "30m"
MAX_ERROR_CHARS = 800
_ASKED = {"task", "agent", "output_schema"}


class Invokes(Protocol):
    """The part of `ctx.step` these calls use (the runtime's `Step`, the sidecar's host step)."""

    def invoke(
        self,
        step_id: str,
        function_id: str,
        data: dict[str, Any] | None = None,
        timeout: str | float | None = None,
    ) -> Any:
        """Run another function durably and return its result (`Step.invoke`)."""


class FunctionContext(Protocol):
    """What these calls need of a function's `ctx`: its `step`."""

    @property
    def step(self) -> Invokes:
        """The run's durable steps."""


@overload
def run_agent(
    ctx: FunctionContext, name: str, task: str, *, output: type[M],
    timeout: str | float = DEFAULT_TIMEOUT, step: str | None = None,
) -> M: ...  # fmt: skip
@overload
def run_agent(
    ctx: FunctionContext, name: str, task: str, *, output: None = None,
    timeout: str | float = DEFAULT_TIMEOUT, step: str | None = None,
) -> str: ...  # fmt: skip
def run_agent(
    ctx: FunctionContext,
    name: str,
    task: str,
    *,
    output: type[BaseModel] | None = None,
    timeout: str | float = DEFAULT_TIMEOUT,
    step: str | None = None,
) -> BaseModel | str:
    """Run the named agent (`workspace/agents/<name>/AGENT.md`) on `task` as a durable child
    run and return its answer: an instance of `output` (validated), or the text when `output`
    is None. `step` is the step's id (default `agent-<name>`); `timeout` how long to wait.
    Raises `AgentRunError` when the agent fails, does not answer within `timeout` or does not
    exist, and `AgentAnswerError` when its answer cannot fit `output` (see the module)."""
    step_id = step or f"agent-{name}"
    schema = output.model_json_schema() if output is not None else None
    task_data = SubagentTask(task=task, agent=name, output_schema=schema)
    # these fields only: a workspace function's invoke may set no other (`sidecar.invoke_policy`)
    data = task_data.model_dump(mode="json", include=_ASKED, exclude_none=True)
    try:
        result = ctx.step.invoke(step_id, SUBAGENT_HANDLER, data, timeout)
    except StepFailedError as exc:
        raise _failure(step_id, name, output, exc.error) from None
    if not isinstance(result, dict) or result.get("no_agent"):
        raise AgentRunError(step_id, name, "does not exist (no agents/<name>/AGENT.md loads)")
    answer = str(result.get("answer", ""))
    if output is None:
        return answer
    try:
        return output.model_validate_json(answer)
    except ValidationError as exc:  # the schema passed, a validator of the model did not
        why = f"gave JSON that {output.__name__} refuses: {_first(exc)}"
        raise AgentAnswerError(step_id, name, why) from None


def run_network(
    ctx: FunctionContext,
    name: str,
    task: str,
    state: dict[str, Any] | None = None,
    *,
    timeout: str | float = DEFAULT_TIMEOUT,
    step: str | None = None,
) -> dict[str, Any]:
    """Run the network `name` (`workspace/networks/<name>.md`, or an `@network`) on `task`
    from `state` as a durable child run; returns `{"answer", "state", "stopped"}`: the last
    agent's answer, the final shared state, why it stopped. A network that cannot run
    answers why (no error). Raises `AgentRunError` when the run fails or outlives `timeout`."""
    step_id = step or f"network-{name}"
    run = NetworkRun(network=name, task=task, state=state or {})
    data = run.model_dump(mode="json", include={"network", "task", "state"})
    try:
        out = ctx.step.invoke(step_id, NETWORK_HANDLER, data, timeout)
    except StepFailedError as exc:
        raise AgentRunError(step_id, name, f"(a network) failed: {exc.error}") from None
    return {key: out.get(key) for key in ("answer", "state", "stopped")}


def _failure(step_id: str, name: str, output: type[BaseModel] | None, error: str) -> AgentRunError:
    """The error for a child run that ended with `error` ("Type: text", or the timeout's)."""
    kind, _, text = error.partition(": ")
    if kind == StructuredAnswerError.__name__:
        wanted = output.__name__ if output is not None else "its output schema"
        why = f"gave no answer that fits {wanted}: {text}"
        return AgentAnswerError(step_id, name, why[:MAX_ERROR_CHARS])
    return AgentRunError(step_id, name, f"failed: {error}"[:MAX_ERROR_CHARS])


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "(the top level)"
    return f"at {where}: {error['msg']}"[:MAX_ERROR_CHARS]


__all__ = ["FunctionContext", "network", "run_agent", "run_network"]
