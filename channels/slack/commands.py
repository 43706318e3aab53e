"""Slack slash commands (`/new`, `/status`, ...: the list in `harness.events.commands`) to
inbound actions.

Slack posts a slash command form-encoded to `POST /webhooks/slack/commands` (signed like
events: `verify.py`), or sends it over Socket Mode as a `slash_commands` envelope with the
same fields. It must be acknowledged within 3 seconds: the route answers an empty 200 at once
and the agent's answer is posted into the conversation like any reply. The command acts on
the conversation of the channel it was typed in: a DM's one conversation (in a channel, whose
conversations are threads, type `@bot !new` in the thread instead). Slack does not resend a
slash command; its `trigger_id` names the event all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from channels.base import Ignored, Inbound, Publish
from channels.slack.meta import SlackMeta
from channels.slack.transform import CHANNEL, slack_asker
from harness.addresses import ChannelMeta
from harness.events import Destination, MessageReceived, Sender
from harness.events.commands import parse_command


def parse_command_form(body: bytes) -> dict[str, str]:
    """The fields of a form-encoded slash command body (first value of each). Never raises:
    an undecodable body has no fields."""
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {key: values[0] for key, values in fields.items() if values}


def transform_command(
    form: Mapping[str, Any],
    *,
    display_name: Callable[[str], str],
    allowed_channels: frozenset[str] = frozenset(),
    drop_unlisted: bool = False,
) -> Inbound:
    """What to do with one slash command's fields: publish it as the chat message `/<name>
    <text>` (so `MessageReceived.command` is set), or ignore it with a reason. Never raises
    (`display_name` must not either)."""
    channel, user = str(form.get("channel_id") or ""), str(form.get("user_id") or "")
    typed = f"{form.get('command') or ''} {form.get('text') or ''}".strip()
    command = parse_command(typed)
    if not channel or not user or command is None:
        return Ignored("slash command without a channel, a user or a command")
    if drop_unlisted and channel not in allowed_channels and user not in allowed_channels:
        return Ignored(f"channel {channel} is not in SLACK_ALLOWED_CHANNELS")
    is_dm = channel.startswith("D")
    team = str(form.get("team_id") or "")
    name = display_name(user)
    data = MessageReceived(
        message=typed,
        session_key=f"{CHANNEL}-{channel}",
        channel=CHANNEL,
        sender=Sender(id=user, name=name),
        destination=Destination(chat_id=channel),
        channel_meta=ChannelMeta.of(
            SlackMeta(team_id=team, channel_type="im" if is_dm else "channel").keys(),
            asker=slack_asker(channel, user, name, is_dm=is_dm, allowed=allowed_channels),
            can_answer=True,
            group=not is_dm,
        ),
        command=command.name,
    )
    trigger = str(form.get("trigger_id") or "")
    return Publish(data.to_event(id=f"slack-command-{team}-{trigger}" if trigger else None))
