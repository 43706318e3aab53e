"""Which functions a workspace function may invoke (`ctx.step.invoke`), and with what data:
the sidecar's own (the ones this executor's host loaded from `functions/`) as asked, and two
of the fleet's, the sub-agent and the network, only in the shape `harness.agent.api` sends.

Every other function is the fleet's (the agent's `agent-handle-message`, a channel's
delivery, the built-ins) and trusts its event's data as the fleet wrote it: invoked with a
typed "yes" in a person's session and that person's access description, the agent's handler
would answer their pending approval in their name. An invocation skips the publish policy
(it is not a published event), so it is refused here, before anything runs.

An agent run (`agent-sub-agent`: `task`, `agent`, `output_schema`) or a network run
(`agent-network`: `network`, `task`, `state`) is what the agent's own `delegate_*` tools
already start, so a function the agent wrote may start one too, with nothing else: no chat to
answer in or to ask a person in (`reply`, `ask_in`), no parent session whose tasks it could
touch, no network state to forge, no depth to reset. The child therefore runs unattended: its
tools are those its agent file allows within the operator's, every call goes through the
approval hook, and a risky one follows `AGENT_APPROVAL_UNATTENDED` (by default the owner is
asked in their chat).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.errors import InvokeRefusedError
from harness.events import NETWORK_HANDLER, SUBAGENT_HANDLER, NetworkRun, SubagentTask

FLEET_INVOKABLE: Mapping[str, tuple[type[BaseModel], frozenset[str]]] = {
    SUBAGENT_HANDLER: (SubagentTask, frozenset({"task", "agent", "output_schema"})),
    NETWORK_HANDLER: (NetworkRun, frozenset({"network", "task", "state"})),
}
"""The fleet's functions a workspace function may invoke: the model of their data, and the
only fields it may set."""


def checked_invoke(
    function_id: str, data: Mapping[str, Any] | None, own_ids: Collection[str]
) -> dict[str, Any] | None:
    """The data to invoke `function_id` with for a workspace function asking with `data`: as
    asked for one of `own_ids` (the functions loaded from `functions/` by the same executor),
    validated for an agent or network run (see the module). Raises `InvokeRefusedError`
    (nothing is invoked) for any other function, or an agent run with other fields."""
    if function_id in own_ids:
        return dict(data) if data is not None else None
    allowed = FLEET_INVOKABLE.get(function_id)
    if allowed is None:
        raise InvokeRefusedError(
            f"a function may invoke only the functions of the workspace's functions/ folder "
            f"({', '.join(sorted(own_ids)[:20]) or 'none loaded'}), {SUBAGENT_HANDLER!r} and "
            f"{NETWORK_HANDLER!r} (through harness.agent.api); {function_id[:100]!r} is not "
            "one (the fleet's other functions are reached through events, e.g. "
            "agent.message.received in a 'system' session)"
        )
    model, fields = allowed
    given = dict(data or {})
    extra = sorted(set(given) - fields)
    if extra:
        raise InvokeRefusedError(
            f"a function's {function_id!r} run may set only {', '.join(sorted(fields))} "
            f"(it runs unattended, answering the function); got {', '.join(extra)[:200]}"
        )
    try:
        checked = model.model_validate(given)
    except ValidationError as exc:
        where = ", ".join(".".join(str(p) for p in e["loc"]) or "data" for e in exc.errors())
        raise InvokeRefusedError(
            f"a function's {function_id!r} run is not valid ({where[:200]})"
        ) from None
    return checked.model_dump(mode="json", include=set(fields), exclude_none=True)
