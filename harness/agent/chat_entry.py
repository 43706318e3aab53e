"""The two decisions every chat message meets first, for the chat's turn and for a chat
command alike: whether its sender is served (`DM_POLICY`, `harness.access`) and who answers
the chat (its bindings, `roster.bindings`)."""

from __future__ import annotations

import logging

from harness.access import Admission, admit, pairing_text
from harness.agent.deps import AgentDeps
from harness.agent.networks.load import workspace_networks
from harness.agent.proactive import send_reply
from harness.agent.roster.bindings import DEFAULT_TARGET, Target, parse_bindings, target_for
from harness.agent.roster.load import load_roster
from harness.events import MessageReceived, ReplyTarget
from harness.runtime import Context
from harness.settings import DmPolicy

log = logging.getLogger(__name__)


def bound_target(ctx: Context, deps: AgentDeps, data: MessageReceived) -> Target:
    """The agent or network the chat's bindings name (`roster.bindings`), chosen in a durable
    step ("route") so a replay keeps the choice. A network that does not exist (or does not
    load) is not chosen: the default agent answers, with one warning."""

    def route() -> str:
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
            return str(DEFAULT_TARGET)
        return str(chosen)

    return Target.parse(str(ctx.step.run("route", route)))


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
