"""Chat commands: which message texts are commands, and the list every channel offers.

A message is a command when its whole first word is `/name` (any name: an unknown one is
answered with the list) or `!name` for a listed name (Slack's client takes a leading `/` for
its own slash commands, so `!new` reaches us as text), optionally `/name@bot` (Telegram adds
the bot's username in groups; the Telegram channel drops a command addressed to another bot
before it is published). `/etc/hosts is wrong` is not a command: the name must end at a space.
The agent answers commands without a model call (`harness.agent.chat_commands`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMANDS: dict[str, str] = {
    "new": "start a fresh conversation (the old one is kept)",
    "reset": "start a fresh conversation and clear today's working notes",
    "stop": "stop what the agent is doing in this chat",
    "status": "model, conversation size, today's spend, running tasks",
    "usage": "tokens and cost today and over the last 7 days",
    "pair": "pending pairing codes and who is approved (the owner only)",
    "help": "this list",
}
"""Each command's name and what it does, in the order the lists show them (Telegram's menu,
Slack's manifest, `/help`)."""

_COMMAND = re.compile(r"([/!])([A-Za-z][A-Za-z0-9_]{0,31})(?:@([A-Za-z0-9_]+))?(?:\s+(.*))?", re.S)


@dataclass(frozen=True)
class ChatCommand:
    """A parsed command: its `name` (lower case), the words after it (`args`) and the bot
    it was addressed to (`bot`, Telegram's `/name@bot`; None when not addressed)."""

    name: str
    args: str = ""
    bot: str | None = None


def parse_command(text: str) -> ChatCommand | None:
    """The command `text` is, or None for an ordinary message. Never raises."""
    found = _COMMAND.fullmatch(text.strip())
    if found is None:
        return None
    prefix, name, bot, args = found.groups()
    name = name.lower()
    if prefix == "!" and name not in COMMANDS:
        return None
    return ChatCommand(name=name, args=(args or "").strip(), bot=bot)


def help_text() -> str:
    """The list of commands, one a line, as `/help` answers it."""
    return "Commands:\n" + "\n".join(f"/{name} - {what}" for name, what in COMMANDS.items())


IS_COMMAND = "event.data.get('command')"
"""The trigger predicate of a message that is a command (`MessageReceived.command`)."""
ORDINARY_MESSAGE = f"not {IS_COMMAND}"
"""The trigger predicate of any other message (one published without the field included)."""
