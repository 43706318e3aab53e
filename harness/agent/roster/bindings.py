"""Which agent answers a chat message: the operator's bindings and the agents' own.

    AGENT_BINDINGS="slack:C0123=researcher, telegram=coder, slack:*:U777=triage, slack@T0456=ops"

The operator's bindings (`AGENT_BINDINGS`) are entries separated by commas or new lines, each
`where=agent`, `where` being `channel[@team][:chat_id[:sender]]`: a channel (`telegram`,
`slack`, `api`, ...), optionally one Slack workspace (`@` its team id), one chat (its id as the
channel gives it; `*` or nothing for any chat) and one sender (their id). `agent` is a named
agent or `main` (the default agent, to carve a chat out of a wider binding). An agent's file
binds itself the same way in front matter (`bindings: [{channel: slack, chat_id: C0123}]`).

A message goes to the agent of the most specific binding that matches it (the one naming the
most of team, chat and sender); at equal specificity the operator's binding wins over a file's,
and among the rest the agent whose name sorts first (`overlaps` lists such ties for `harness
agents`). No binding matches: the default agent. Pure: reads no file and no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from pydantic import ValidationError

from harness.agent.roster.spec import DEFAULT_AGENT, NAME_PATTERN, Binding

if TYPE_CHECKING:
    from harness.agent.roster.load import Roster
    from harness.events import MessageReceived

OPERATOR = "AGENT_BINDINGS"
"""The `source` of the operator's bindings."""
TEAM_META = "team_id"
"""The key of `channel_meta` a platform with workspaces (Slack) writes the message's team in."""
ANY = "*"


@dataclass(frozen=True)
class Bound:
    """A binding and the agent it sends messages to. `source` is who declared it: `OPERATOR`,
    or the workspace-relative path of the agent's file."""

    binding: Binding
    agent: str
    source: str

    @property
    def by_operator(self) -> bool:
        """True for a binding of `AGENT_BINDINGS`."""
        return self.source == OPERATOR

    def rank(self) -> tuple[int, int, str]:
        """Sort key: the binding that wins sorts first."""
        return (-self.binding.specificity(), 0 if self.by_operator else 1, self.agent)

    def __str__(self) -> str:
        return f"{describe(self.binding)}={self.agent}"


def describe(binding: Binding) -> str:
    """`binding` in the grammar of `AGENT_BINDINGS` (`slack@T1:C0123:U7`)."""
    text = binding.channel + (f"@{binding.team}" if binding.team else "")
    if binding.sender is not None:
        return f"{text}:{binding.chat_id or ANY}:{binding.sender}"
    return f"{text}:{binding.chat_id}" if binding.chat_id is not None else text


def parse_bindings(text: str) -> tuple[Bound, ...]:
    """The bindings `AGENT_BINDINGS` holds, in order. Raises `ValueError` naming the first
    entry that is not `channel[@team][:chat_id[:sender]]=agent`, or a place bound twice."""
    found: list[Bound] = []
    seen: dict[Binding, str] = {}
    for entry in (part.strip() for part in text.replace("\n", ",").split(",")):
        if not entry:
            continue
        bound = _parse_entry(entry)
        if seen.get(bound.binding, bound.agent) != bound.agent:
            raise ValueError(
                f"{describe(bound.binding)!r} is bound twice ({seen[bound.binding]} and "
                f"{bound.agent}); keep one"
            )
        seen[bound.binding] = bound.agent
        found.append(bound)
    return tuple(found)


def _parse_entry(entry: str) -> Bound:
    where, equals, agent = entry.rpartition("=")
    agent, where = agent.strip(), where.strip()
    if not equals or not where:
        raise ValueError(f"{entry!r} is not channel[@team][:chat_id[:sender]]=agent")
    if agent != DEFAULT_AGENT and not NAME_PATTERN.match(agent):
        raise ValueError(f"{entry!r}: {agent!r} is not an agent's name (a-z, 0-9, _ and -)")
    place, _, rest = where.partition(":")
    chat, _, sender = rest.partition(":")
    channel, at, team = place.partition("@")
    try:
        binding = Binding(
            channel=channel.strip(),
            team=_field(team) if at else None,
            chat_id=_field(chat),
            sender=_field(sender),
        )
    except ValidationError as exc:
        problem = exc.errors()[0]
        where_bad = ".".join(str(p) for p in problem["loc"])
        raise ValueError(f"{entry!r}: {where_bad}: {problem['msg']}") from None
    return Bound(binding=binding, agent=agent, source=OPERATOR)


def _field(value: str) -> str | None:
    value = value.strip()
    return None if value in ("", ANY) else value


def file_bindings(roster: Roster) -> tuple[Bound, ...]:
    """The bindings the agents' files declare, by agent name."""
    return tuple(
        Bound(binding=binding, agent=name, source=spec.path)
        for name in roster.names()
        if (spec := roster.get(name)) is not None
        for binding in spec.bindings
    )


def matches(binding: Binding, message: MessageReceived) -> bool:
    """True when every field `binding` names is the message's."""
    team = message.channel_meta.platform.get(TEAM_META)
    return (
        binding.channel == message.channel
        and binding.team in (None, team)
        and binding.chat_id in (None, message.destination.chat_id)
        and binding.sender in (None, message.sender.id)
    )


def agent_for(message: MessageReceived, roster: Roster, operator: Sequence[Bound]) -> str:
    """The name of the agent that answers `message`: that of the winning binding (see the
    module docstring), `DEFAULT_AGENT` when none matches. The name may be one the roster
    lacks (an operator's binding to an agent whose file is gone): the caller falls back."""
    candidates = [b for b in (*operator, *file_bindings(roster)) if matches(b.binding, message)]
    return min(candidates, key=Bound.rank).agent if candidates else DEFAULT_AGENT


def overlaps(bindings: Iterable[Bound]) -> list[str]:
    """A warning for each pair of bindings to different agents that some message could match
    at equal specificity and from the same kind of source (both the operator's, or both
    files'): the agent whose name sorts first wins them, which may not be what was meant."""
    warnings = []
    for first, second in combinations(sorted(bindings, key=Bound.rank), 2):
        if first.agent == second.agent or first.by_operator != second.by_operator:
            continue
        if _can_meet(first.binding, second.binding):
            warnings.append(
                f"{first} ({first.source}) and {second} ({second.source}) can both match a "
                f"message; {first.agent} answers it"
            )
    return warnings


def _can_meet(a: Binding, b: Binding) -> bool:
    if a.channel != b.channel or a.specificity() != b.specificity():
        return False
    pairs = ((a.team, b.team), (a.chat_id, b.chat_id), (a.sender, b.sender))
    return all(x is None or y is None or x == y for x, y in pairs)
