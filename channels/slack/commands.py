"""Slack slash commands (`/new`, `/status`, ...: the list in `harness.events.commands`) to
inbound actions.

The app has one slash command named for the agent (`/harness status`: Slack's own `/status`
cannot be taken; `setup.slash_command`); `/new` and the others work too where an app registers
them. Slack posts a slash command form-encoded to `POST /webhooks/slack/commands` (signed like
events: `verify.py`), or sends it over Socket Mode as a `slash_commands` envelope with the same
fields. It must be acknowledged within 3 seconds: the route answers an empty 200 at once and
the agent's answer is posted into the conversation like any reply. The command acts on the
conversation of the DM it was typed in (`slack-<channel>`, the DM's one conversation).

In a channel a slash command has no conversation to act on: there each thread with the bot
is a conversation of its own (`slack-<channel>-<thread>`), and Slack sends a slash command
without the thread it was typed under. Guessing one (the person's latest thread) could
`/reset` or `/stop` the wrong one, so nothing is published: the person alone is answered at
once, ephemerally, to type the command in the thread, mentioning the bot (`@bot !stop`),
which the thread's conversation receives as the command (`IN_CHANNEL`; the HTTP route
answers it as the response body, Socket Mode in the envelope's acknowledgement). Slack does
not resend a slash command; its `trigger_id` names the event all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from channels.base import Ignored, Inbound, Publish, Respond
from channels.slack.meta import SlackMeta
from channels.slack.transform import CHANNEL, slack_asker
from harness.addresses import ChannelMeta
from harness.events import Destination, MessageReceived, Sender
from harness.events.commands import COMMANDS, help_text, parse_command

IN_CHANNEL = (
    "In a channel each thread with me is a conversation of its own, and a slash command does "
    "not say which one you mean. Type the command in that thread, mentioning me: "
    "`@{agent} !{command}`."
)
"""The ephemeral answer to a slash command typed in a channel (see the module)."""


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
    """What to do with one slash command's fields: in a DM publish it as the chat message
    `/<name> <text>` (so `MessageReceived.command` is set); in a channel answer it
    ephemerally (`in_channel`); or ignore it with a reason. Never raises (`display_name` must
    not either)."""
    channel, user = str(form.get("channel_id") or ""), str(form.get("user_id") or "")
    slash, text = str(form.get("command") or "").strip(), str(form.get("text") or "").strip()
    if not channel or not user or not slash:
        return Ignored("slash command without a channel, a user or a command")
    typed = _typed(slash, text)
    command = parse_command(typed)
    assert command is not None  # `_typed` writes a command
    if drop_unlisted and channel not in allowed_channels and user not in allowed_channels:
        return Ignored(f"channel {channel} is not in SLACK_ALLOWED_CHANNELS")
    if not channel.startswith("D"):  # a channel: which thread is meant is not known
        return in_channel(command.name, slash)
    team = str(form.get("team_id") or "")
    name = display_name(user)
    data = MessageReceived(
        message=typed,
        session_key=f"{CHANNEL}-{channel}",
        channel=CHANNEL,
        sender=Sender(id=user, name=name),
        destination=Destination(chat_id=channel),
        channel_meta=ChannelMeta.of(
            SlackMeta(team_id=team, channel_type="im").keys(),
            asker=slack_asker(channel, user, name, is_dm=True, allowed=allowed_channels),
            can_answer=True,
            group=False,
        ),
        command=command.name,
    )
    trigger = str(form.get("trigger_id") or "")
    return Publish(data.to_event(id=f"slack-command-{team}-{trigger}" if trigger else None))


def in_channel(command: str, slash: str) -> Respond:
    """The ephemeral answer to slash command `command` typed in a channel (`IN_CHANNEL`; the
    list of commands too for `/help`). `slash` is the command as typed: `/harness` names
    the bot."""
    agent = slash.lstrip("/") if slash.lstrip("/").lower() not in COMMANDS else "bot"
    text = IN_CHANNEL.format(agent=agent, command=command)
    if command == "help":
        text = f"{help_text()}\n\n{text}"
    return Respond({"response_type": "ephemeral", "text": text})


def _typed(slash: str, text: str) -> str:
    """The chat command a slash command stands for: itself when it is one (`/new`, for an app
    that registers them one by one), else its text's (`/harness status` is `/status`; no text
    or no command in it is `/help`)."""
    if slash.lstrip("/").lower() in COMMANDS:
        return f"{slash} {text}".strip()
    inner = parse_command("/" + text) if text else None
    return f"/{inner.name} {inner.args}".strip() if inner is not None else "/help"
