"""Who answers a chat message, an agent or a network: the operator's bindings and the files'.

    AGENT_BINDINGS="slack:C0123=researcher, telegram=coder, slack:*:U777=network:triage"

The operator's bindings (`AGENT_BINDINGS`) are entries separated by commas or new lines, each
`where=target`, `where` being `channel[@team][:chat_id[:sender]]`: a channel (`telegram`,
`slack`, `api`, ...), optionally one Slack workspace (`@` its team id), one chat (its id as the
channel gives it; `*` or nothing for any chat) and one sender (their id). `target` is a named
agent, `main` (the default agent, to carve a chat out of a wider binding) or
`network:<name>` (a network, `workspace/networks/<name>.md`). An agent's or a network's file
binds itself the same way in front matter (`bindings: [{channel: slack, chat_id: C0123}]`).

A message goes to the target of the most specific binding that matches it (the one naming the
most of team, chat and sender); at equal specificity the operator's binding wins over a file's,
and among the rest the target that sorts first as written (`overlaps` lists such ties for
`harness agents`). No binding matches: the default agent. Pure: reads no file and no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Literal

from pydantic import ValidationError

from harness.agent.roster.spec import DEFAULT_AGENT, NAME_PATTERN, Binding

if TYPE_CHECKING:
    from harness.agent.networks.load import Networks
    from harness.agent.roster.load import Roster
    from harness.events import MessageReceived

OPERATOR = "AGENT_BINDINGS"
"""The `source` of the operator's bindings."""
TEAM_META = "team_id"
"""The key of `channel_meta` a platform with workspaces (Slack) writes the message's team in."""
ANY = "*"
NETWORK_PREFIX = "network:"
"""How a binding's target names a network rather than an agent (`slack:C1=network:triage`)."""


@dataclass(frozen=True)
class Target:
    """What answers a bound chat: an agent (`DEFAULT_AGENT` for the default one) or a
    network. Written `name` for an agent and `network:name` for a network (`str`, `parse`),
    which is also how a chat turn records its choice."""

    name: str
    kind: Literal["agent", "network"] = "agent"

    @property
    def is_network(self) -> bool:
        """True when a network answers."""
        return self.kind == "network"

    @classmethod
    def parse(cls, text: str) -> Target:
        """The target `text` writes (`coder`, `main`, `network:triage`). Raises `ValueError`
        (one line) when it is neither an agent's nor a network's name."""
        text = text.strip()
        if text.startswith(NETWORK_PREFIX):
            name = text.removeprefix(NETWORK_PREFIX).strip()
            if not NAME_PATTERN.match(name):
                raise ValueError(f"{name!r} is not a network's name (a-z, 0-9, _ and -)")
            return cls(name, "network")
        if text != DEFAULT_AGENT and not NAME_PATTERN.match(text):
            raise ValueError(
                f"{text!r} is not an agent's name (a-z, 0-9, _ and -) nor network:<name>"
            )
        return cls(text)

    def __str__(self) -> str:
        return f"{NETWORK_PREFIX}{self.name}" if self.is_network else self.name


DEFAULT_TARGET = Target(DEFAULT_AGENT)


@dataclass(frozen=True)
class Bound:
    """A binding and the agent or network it sends messages to. `source` is who declared it:
    `OPERATOR`, or the workspace-relative path of the agent's or network's file."""

    binding: Binding
    target: Target
    source: str

    @property
    def by_operator(self) -> bool:
        """True for a binding of `AGENT_BINDINGS`."""
        return self.source == OPERATOR

    def rank(self) -> tuple[int, int, str]:
        """Sort key: the binding that wins sorts first."""
        return (-self.binding.specificity(), 0 if self.by_operator else 1, str(self.target))

    def __str__(self) -> str:
        return f"{describe(self.binding)}={self.target}"


def describe(binding: Binding) -> str:
    """`binding` in the grammar of `AGENT_BINDINGS` (`slack@T1:C0123:U7`)."""
    text = binding.channel + (f"@{binding.team}" if binding.team else "")
    if binding.sender is not None:
        return f"{text}:{binding.chat_id or ANY}:{binding.sender}"
    return f"{text}:{binding.chat_id}" if binding.chat_id is not None else text


def parse_bindings(text: str) -> tuple[Bound, ...]:
    """The bindings `AGENT_BINDINGS` holds, in order. Raises `ValueError` (one line) naming
    the first entry that is not `channel[@team][:chat_id[:sender]]=target`, or a place bound
    twice."""
    found: list[Bound] = []
    seen: dict[Binding, Target] = {}
    for entry in (part.strip() for part in text.replace("\n", ",").split(",")):
        if not entry:
            continue
        bound = _parse_entry(entry)
        if seen.get(bound.binding, bound.target) != bound.target:
            raise ValueError(
                f"{describe(bound.binding)!r} is bound twice ({seen[bound.binding]} and "
                f"{bound.target}); keep one"
            )
        seen[bound.binding] = bound.target
        found.append(bound)
    return tuple(found)


def _parse_entry(entry: str) -> Bound:
    where, equals, written = entry.rpartition("=")
    where = where.strip()
    if not equals or not where:
        raise ValueError(
            f"{entry!r} is not channel[@team][:chat_id[:sender]]=agent (or =network:<name>)"
        )
    try:
        target = Target.parse(written)
    except ValueError as exc:
        raise ValueError(f"{entry!r}: {exc}") from None
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
    return Bound(binding=binding, target=target, source=OPERATOR)


def _field(value: str) -> str | None:
    value = value.strip()
    return None if value in ("", ANY) else value


def file_bindings(roster: Roster, networks: Networks | None = None) -> tuple[Bound, ...]:
    """The bindings the agents' files declare, by agent name, then those of the networks'
    files (of `networks` that loaded; none when not given), by network name."""
    agents = (
        Bound(binding=binding, target=Target(name), source=spec.path)
        for name in roster.names()
        if (spec := roster.get(name)) is not None
        for binding in spec.bindings
    )
    specs = networks.networks if networks is not None else {}
    nets = (
        Bound(binding=binding, target=Target(name, "network"), source=spec.path)
        for name, spec in sorted(specs.items())
        for binding in spec.bindings
    )
    return (*agents, *nets)


def matches(binding: Binding, message: MessageReceived) -> bool:
    """True when every field `binding` names is the message's."""
    team = message.channel_meta.platform.get(TEAM_META)
    return (
        binding.channel == message.channel
        and binding.team in (None, team)
        and binding.chat_id in (None, message.destination.chat_id)
        and binding.sender in (None, message.sender.id)
    )


def target_for(
    message: MessageReceived,
    roster: Roster,
    operator: Sequence[Bound],
    networks: Networks | None = None,
) -> Target:
    """Who answers `message`: the target of the winning binding among the operator's and the
    files' (see the module docstring), `DEFAULT_TARGET` when none matches. The target may be
    one the workspace lacks (an operator's binding to an agent or a network whose file is
    gone, or did not load): the caller falls back to the default agent."""
    bound = (*operator, *file_bindings(roster, networks))
    candidates = [b for b in bound if matches(b.binding, message)]
    return min(candidates, key=Bound.rank).target if candidates else DEFAULT_TARGET


def overlaps(bindings: Iterable[Bound]) -> list[str]:
    """A warning for each pair of bindings to different targets that some message could match
    at equal specificity and from the same kind of source (both the operator's, or both
    files'): the target that sorts first wins them, which may not be what was meant."""
    warnings = []
    for first, second in combinations(sorted(bindings, key=Bound.rank), 2):
        if first.target == second.target or first.by_operator != second.by_operator:
            continue
        if _can_meet(first.binding, second.binding):
            warnings.append(
                f"{first} ({first.source}) and {second} ({second.source}) can both match a "
                f"message; {first.target} answers it"
            )
    return warnings


def _can_meet(a: Binding, b: Binding) -> bool:
    if a.channel != b.channel or a.specificity() != b.specificity():
        return False
    pairs = ((a.team, b.team), (a.chat_id, b.chat_id), (a.sender, b.sender))
    return all(x is None or y is None or x == y for x, y in pairs)
