"""Which functions a workspace function may invoke (`ctx.step.invoke`): only the sidecar's
own, the ones this executor's host loaded from `functions/`.

Every other function is the fleet's (the agent's `agent-handle-message`, a channel's
delivery, the built-ins) and trusts its event's data as the fleet wrote it: invoked with a
typed "yes" in a person's session and that person's access description, the agent's handler
would answer their pending approval in their name. An invocation skips the publish policy
(it is not a published event), so it is refused here, before anything runs.
"""

from __future__ import annotations

from collections.abc import Collection

from harness.errors import InvokeRefusedError


def check_invoke(function_id: str, own_ids: Collection[str]) -> None:
    """Return when a workspace function may invoke `function_id`; raise `InvokeRefusedError`
    (nothing is invoked) when it is not one of `own_ids`, the functions loaded from
    `functions/` by the same executor."""
    if function_id in own_ids:
        return
    raise InvokeRefusedError(
        f"a function may invoke only the functions of the workspace's functions/ folder "
        f"({', '.join(sorted(own_ids)[:20]) or 'none loaded'}); {function_id[:100]!r} is not "
        "one (the fleet's functions are reached through events, e.g. agent.message.received "
        "in a 'system' session)"
    )
