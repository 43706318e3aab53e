"""Which message texts are chat commands (`harness.events.commands`), and the message's
`command` derived from its text."""

from __future__ import annotations

from harness.events import Destination, MessageReceived, Sender
from harness.events.commands import ChatCommand, parse_command


def test_parse_command_reads_name_args_and_bot() -> None:
    assert parse_command("/status") == ChatCommand("status")
    assert parse_command("  /New  ") == ChatCommand("new")
    assert parse_command("/help@harness_bot") == ChatCommand("help", bot="harness_bot")
    assert parse_command("/usage week please") == ChatCommand("usage", args="week please")
    assert parse_command("/frobnicate") == ChatCommand("frobnicate")


def test_parse_command_leaves_ordinary_text_alone() -> None:
    # a path, a sentence, a bang word that is not a command
    assert parse_command("/etc/hosts is wrong") is None
    assert parse_command("please /stop") is None
    assert parse_command("!important: read this") is None
    assert parse_command("") is None


def test_parse_command_takes_a_bang_for_a_listed_command() -> None:
    # Slack's client keeps a leading `/` for its own slash commands
    assert parse_command("!new") == ChatCommand("new")


def _message(text: str, **extra: object) -> MessageReceived:
    return MessageReceived(
        message=text,
        session_key="s",
        channel="test",
        sender=Sender(id="u"),
        destination=Destination(chat_id="s"),
        **extra,  # type: ignore[arg-type]
    )


def test_message_command_is_derived_from_its_text_unless_given() -> None:
    assert _message("/stop").command == "stop"
    assert _message("stop it").command is None
    assert _message("/status", command="usage").command == "usage"
    # a file captioned "/new" is a file to look at, not a command
    file = {"kind": "photo", "ref": "f1"}
    assert _message("/new", attachments=[file]).command is None
    # read back from the wire, the command stays
    assert MessageReceived.model_validate(_message("/new").model_dump()).command == "new"
