"""Named agents: specialists defined as files (`workspace/agents/<name>/AGENT.md`).

    roster = load_roster(workspace)      # every agent that parsed, and what did not
    spec = roster.get("researcher")      # None: no such agent
    roster.errors                        # [AgentLoadError(path, line, message), ...]

`spec.AgentSpec` is what one file declares; `load.load_roster` reads them all. The default
agent (today's `SOUL.md` / `USER.md` one) is not a file: it is `DEFAULT_AGENT`.
"""

from harness.agent.roster.load import AgentLoadError, Roster, load_roster
from harness.agent.roster.spec import DEFAULT_AGENT, AgentSpec, Binding

__all__ = ["DEFAULT_AGENT", "AgentLoadError", "AgentSpec", "Binding", "Roster", "load_roster"]
