"""Slack slash commands (`/new`, `/status`, ...: the list in `harness.events.commands`) to
inbound actions.

The app has one slash command named for the agent (`/harness status`: Slack's own `/status`
cannot be taken; `setup.slash_command`); `/new` and the others work too where an app registers
them. Slack posts a slash command form-encoded to `POST /webhooks/slack/commands` (signed like
events: `verify.py`), or sends it over Socket Mode as a `slash_commands` envelope with the same
fields. It must be acknowledged within 3 seconds: the route answers an empty 200 at once and
the agent's answer is posted into the conversation like any reply. The command acts on the
conversation of the channel it was typed in: a DM's one conversation (in a channel, whose
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
from harness.events.commands import COMMANDS, parse_command


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
    slash, text = str(form.get("command") or "").strip(), str(form.get("text") or "").strip()
    if not channel or not user or not slash:
        return Ignored("slash command without a channel, a user or a command")
    typed = _typed(slash, text)
    command = parse_command(typed)
    assert command is not None  # `_typed` writes a command
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


def _typed(slash: str, text: str) -> str:
    """The chat command a slash command stands for: itself when it is one (`/new`, for an app
    that registers them one by one), else its text's (`/harness status` is `/status`; no text
    or no command in it is `/help`)."""
    if slash.lstrip("/").lower() in COMMANDS:
        return f"{slash} {text}".strip()
    inner = parse_command("/" + text) if text else None
    return f"/{inner.name} {inner.args}".strip() if inner is not None else "/help"
