"""Which chats the fleet serves, as the sidecar's executor sees them: the only chats where a
workspace function's message may have the agent reply.

A chat is served as `DM_POLICY` serves its people (`harness.access`): with `open` every chat;
otherwise a chat its channel's allowlist names (`TELEGRAM_ALLOWED_CHATS`,
`SLACK_ALLOWED_CHANNELS`), and with `pairing` also a chat the owner paired, or the private
chat of a person the owner paired (a Telegram private chat's id is its person's id; a Slack
DM is reached by the person's user id). Any other chat would let agent-written code make the
agent speak to anyone in its name.

The executor reads no `.env`: the supervisor reads the allowlists where the fleet's settings
are and hands them over in the executor's environment (`allowlist_environment`), where the
executor reads them back (`configured_allowlists`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from channels.slack.settings import SlackSettings
from channels.telegram.settings import TelegramSettings
from harness.errors import InvalidSettingsError
from harness.records.stores import redis_records
from harness.runtime import Runtime
from harness.settings import DmPolicy
from harness.settings_errors import read_settings

log = logging.getLogger("harness.sidecar")

ALLOWLIST_VARIABLES = {"telegram": "TELEGRAM_ALLOWED_CHATS", "slack": "SLACK_ALLOWED_CHANNELS"}
"""The allowlist setting of each channel, by channel name."""


@dataclass(frozen=True)
class ServedChats:
    """The chats a function's message may be answered in, for one executor."""

    runtime: Runtime
    policy: DmPolicy
    allowlists: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def configured(cls, runtime: Runtime, policy: DmPolicy) -> ServedChats:
        """The chats served under `policy`, with the allowlists the channels' settings name
        (`configured_allowlists`)."""
        return cls(runtime, policy, configured_allowlists())

    def serves(self, channel: str, chat_id: str) -> bool:
        """True when the fleet serves chat `chat_id` of `channel` now (see the module
        docstring). Raises `BusUnavailableError` when the pairings cannot be read."""
        if self.policy == "open" or chat_id in self.allowlists.get(channel, frozenset()):
            return True
        if self.policy == "allowlist":
            return False
        subjects = [f"{channel}:chat:{chat_id}", f"{channel}:user:{chat_id}"]
        return redis_records(self.runtime).pairing.allowed(subjects)


def configured_allowlists() -> dict[str, frozenset[str]]:
    """Each channel's allowlist as its settings read it (environment and `.env`). A channel
    whose settings do not validate contributes none (logged): its chats are then served only
    when paired."""
    found: dict[str, frozenset[str]] = {}
    try:
        found["telegram"] = read_settings(TelegramSettings).telegram_allowed_chats
    except InvalidSettingsError as exc:
        log.warning("Telegram settings are invalid; its allowlist is not read: %s", exc)
    try:
        found["slack"] = read_settings(SlackSettings).slack_allowed_channels
    except InvalidSettingsError as exc:
        log.warning("Slack settings are invalid; its allowlist is not read: %s", exc)
    return found


def allowlist_environment() -> dict[str, str]:
    """`configured_allowlists` as the environment variables the executor reads them from."""
    return {
        ALLOWLIST_VARIABLES[channel]: ",".join(sorted(chats))
        for channel, chats in configured_allowlists().items()
        if chats
    }
