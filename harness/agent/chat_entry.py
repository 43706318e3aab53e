"""The two decisions every chat message meets first, for the chat's turn and for a chat
command alike: whether its sender is served (`DM_POLICY`, `harness.access`) and who answers
the chat (its bindings, `roster.bindings`). The turn's "route" step also reads what its agent
starts with (`BoundTurn`), so that one step, not three, records the roster a replay sees."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from harness.access import Admission, admit, pairing_text
from harness.agent.deps import AgentDeps
from harness.agent.named_delegation import agents_found, agents_wanted
from harness.agent.networks.load import workspace_networks
from harness.agent.proactive import send_reply
from harness.agent.roster.bindings import DEFAULT_TARGET, Target, parse_bindings, target_for
from harness.agent.roster.load import Roster, load_roster
from harness.agent.roster.profile import AgentProfile, default_profile, profile_for, run_profile
from harness.agent.roster.spec import DEFAULT_AGENT, AgentSpec
from harness.events import MessageReceived, ReplyTarget
from harness.runtime import Context
from harness.settings import DmPolicy

log = logging.getLogger(__name__)


def bound_target(ctx: Context, deps: AgentDeps, data: MessageReceived) -> Target:
    """The agent or network the chat's bindings name (`roster.bindings`), chosen in a durable
    step ("route") so a replay keeps the choice. A network that does not exist (or does not
    load) is not chosen: the default agent answers, with one warning."""
    return Target.parse(str(ctx.step.run("route", lambda: str(_chosen(ctx, deps, data)[0]))))


@dataclass(frozen=True)
class BoundTurn:
    """Who answers a chat turn and what it starts with, as its "route" step recorded them:
    the `target`; for an agent, its file as read then (`spec`; None for the default agent,
    and for a named one that did not exist, which the default answers for) and the named
    agents it may delegate to (`delegates`). `delegates` is None for a network, and for a run
    an earlier version recorded (the target alone): such a run reads its agent ("agent",
    `run_profile`) and the roster ("roster") in steps of their own, as that version did."""

    target: Target
    spec: AgentSpec | None = None
    delegates: dict[str, str] | None = None

    def profile(self, ctx: Context, deps: AgentDeps) -> AgentProfile:
        """The profile the turn runs with: the default agent's when the agent bound does not
        exist (with a warning: the message is answered all the same)."""
        name = self.target.name
        if self.delegates is None:  # recorded by an earlier version
            profile = run_profile(ctx, deps, name)
        elif self.spec is not None:
            profile = profile_for(deps, self.spec)
        else:
            profile = default_profile(deps) if name == DEFAULT_AGENT else None
        if profile is None:
            log.warning("message bound to agent %r, which does not exist: the default answers",
                        name)  # fmt: skip
            return default_profile(deps)
        return profile


def bound_turn(ctx: Context, deps: AgentDeps, data: MessageReceived) -> BoundTurn:
    """`bound_target`, and for an agent its file and the agents it may delegate to, read in
    the same durable step ("route"): one read of the roster for the three, which a replay
    sees as the first execution did. Records the target alone (as `bound_target`) for a
    network."""

    def route() -> str | dict[str, Any]:
        target, roster = _chosen(ctx, deps, data)
        if target.is_network:
            return str(target)
        spec = None if target.name == DEFAULT_AGENT else roster.get(target.name)
        profile = default_profile(deps) if spec is None else profile_for(deps, spec)
        wanted = agents_wanted(profile, profile.tools, depth=0)
        delegates = {} if wanted == () else agents_found(roster, wanted, profile.name)
        read = None if spec is None else spec.model_dump(mode="json")
        return {"target": str(target), "agent": read, "delegates": delegates}

    recorded = ctx.step.run("route", route)
    if isinstance(recorded, str):  # a network, or a run an earlier version recorded
        return BoundTurn(Target.parse(recorded))
    read = recorded["agent"]
    return BoundTurn(
        Target.parse(recorded["target"]),
        None if read is None else AgentSpec.model_validate(read),
        dict(recorded["delegates"]),
    )


def _chosen(ctx: Context, deps: AgentDeps, data: MessageReceived) -> tuple[Target, Roster]:
    """The target the chat's bindings name (a network that does not load: the default
    agent), and the roster it was chosen from. Call inside the "route" step."""
    roster = load_roster(deps.workspace)
    networks = workspace_networks(deps.workspace, ctx.runtime, roster)
    operator = parse_bindings(deps.settings.agent_bindings)
    chosen = target_for(data, roster, operator, networks)
    if chosen.is_network and networks.get(chosen.name) is None:
        log.warning(
            "message bound to network %r, which does not exist or does not load: the "
            "default agent answers",
            chosen.name,
        )
        return DEFAULT_TARGET, roster
    return chosen, roster


def admitted(ctx: Context, data: MessageReceived, policy: DmPolicy) -> bool:
    """Apply `DM_POLICY` (see `harness.access`); a stranger gets a pairing code, once."""
    asker = data.channel_meta.asker
    if asker is None:
        return True
    verdict = Admission.model_validate(
        ctx.step.run("access", lambda: admit(ctx.runtime, policy, data.channel, asker).model_dump())
    )
    if verdict.serve:
        return True
    log.info("not serving %s: %s", asker.pairing_subject or "a stranger", verdict.reason)
    if verdict.code is not None:
        target = ReplyTarget(
            channel=data.channel,
            destination=data.destination,
            channel_meta=data.channel_meta,
        )
        send_reply(ctx, pairing_text(verdict.code), target)
    return False
