"""Named agents: specialists defined as files (`workspace/agents/<name>/AGENT.md`).

    roster = load_roster(workspace)      # every agent that parsed, and what did not
    spec = roster.get("researcher")      # None: no such agent
    roster.errors                        # [AgentLoadError(path, line, message), ...]

`spec.AgentSpec` is what one file declares; `load.load_roster` reads them all. The default
agent (today's `SOUL.md` / `USER.md` one) is not a file: it is `DEFAULT_AGENT`.

The names are loaded on first use (PEP 562 `__getattr__`): `harness.settings` reads
`harness.agent.roster.bindings`, and importing it should not read the loader too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy_names import lazy_names

if TYPE_CHECKING:
    from harness.agent.roster.load import AgentLoadError, Roster, load_roster
    from harness.agent.roster.spec import DEFAULT_AGENT, AgentSpec, Binding


__all__ = ["DEFAULT_AGENT", "AgentLoadError", "AgentSpec", "Binding", "Roster", "load_roster"]


__getattr__ = lazy_names(
    __name__,
    {
        "AgentLoadError": "load",
        "Roster": "load",
        "load_roster": "load",
        "DEFAULT_AGENT": "spec",
        "AgentSpec": "spec",
        "Binding": "spec",
    },
)
