"""Which modules' `@function`s a fleet worker runs: named here, where the fleet is put
together, so that the engine (`harness.runtime.worker`) names no module of the agent or the
channels. Imports none of them itself: the sidecar reads the list without loading the agent."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.settings import Settings

BUILTIN_FUNCTION_MODULES: tuple[str, ...] = (
    "harness.agent.handlers",
    "harness.agent.task_endings",
    "harness.agent.budget_raise",
    "harness.agent.chat_commands.handler",
    "harness.agent.memory.heartbeat",
    "harness.agent.approvals.text",
    "harness.agent.networks.run",
    "channels.handlers",
)
"""The modules whose functions every worker runs (and the web server registers)."""

BUILTIN_FUNCTION_IDS: frozenset[str] = frozenset(
    {
        "acknowledge-message",
        "agent-budget-raise",
        "agent-chat-command",
        "agent-handle-message",
        "agent-heartbeat",
        "agent-network",
        "agent-sub-agent",
        "agent-task-ended",
        "answer-approval",
        "approval-by-text",
        "ask-approval",
        "cancel-approval",
        "close-approval",
        "global-failure-handler",
        "reconsider-notice",
        "send-reply",
    }
)
"""The ids of the functions `BUILTIN_FUNCTION_MODULES` declare, named without importing them
(the agent's turn, ~0.5 s): what `harness functions` marks "built-in". The sidecar, which
must refuse a file taking one over, loads the modules instead (`fleet_builtin_ids`);
tests/test_fleet_functions.py checks that both agree."""


def function_modules(settings: Settings, extra: Iterable[str] = ()) -> list[str]:
    """The modules whose functions a worker runs: built-ins, `HARNESS_FUNCTION_MODULES`, extra."""
    configured = [m.strip() for m in settings.harness_function_modules.split(",") if m.strip()]
    seen: dict[str, None] = {}
    for module in (*BUILTIN_FUNCTION_MODULES, *configured, *extra):
        seen.setdefault(module, None)
    return list(seen)
