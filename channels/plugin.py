"""What a package provides to add a chat channel: the `harness.channels` entry-point protocol.

A channel plug-in is a `ChannelPlugin` named by an entry point in the `harness.channels`
group; the entry point's name is the channel's name (the `channel` field of its events and the
`{channel}` of its webhook route), so it must equal the `name` of the channels it creates:

    # pyproject.toml of the package
    [project.entry-points."harness.channels"]
    http-callback = "harness_http_callback:plugin"

    # harness_http_callback/__init__.py
    plugin = ChannelPlugin(create=create_channel)

Everything else comes with the `Channel` it creates (`channels.base`): `verify` and `transform`
serve its webhook at `POST /webhooks/<name>` (and `transform_interaction` at
`/webhooks/<name>/interactions`, see `channels.approvals.InteractiveChannel`); `send_reply`
and `complete` are called by the channel functions on the bus (`channels.handlers`),
`acknowledge` by the turn's acknowledgement keeper (`channels.acknowledge`); a
`ResumablePollingChannel` in polling mode is polled by `harness poll` and `harness up`. A
platform that receives messages some other way (Slack's Socket Mode) provides a `listener`.
Two optional hooks serve the commands that set a platform up: `checks` adds the channel's
lines to `harness doctor`, `unconfigured_report` is what `harness setup <name>` prints before
the channel has its credentials. The built-in channels are declared the same way, in this
project's pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from channels.base import Channel
from harness.checks import Check

if TYPE_CHECKING:  # named for the type checker: the listener imports the Redis client
    from channels.listener import Listener
    from harness.runtime import Runtime

ChannelFactory: TypeAlias = Callable[[], Channel]
"""Builds the channel from its own settings (read from the environment and `.env`). Raises
`ChannelNotConfiguredError` when its required settings are missing, another
`ConfigurationError` when one is invalid. Touches no network."""

ListenerFactory: TypeAlias = Callable[["Runtime"], "Listener"]
"""Builds a listener that publishes to the given runtime. Touches no network until it runs."""

ListenerHook: TypeAlias = Callable[[Channel], ListenerFactory | None]
"""Given the configured channel, how to build the listener that receives its messages in a
process of ours (a socket it holds open), or None when the channel is set up for webhooks.
Must not raise; touches no network."""

ChecksHook: TypeAlias = Callable[[bool], list[Check]]
"""`harness doctor`'s checks of this channel, given `offline` (when true, no call leaves this
machine: say the platform check was skipped with `harness.checks.SKIPPED`). [] when the
channel is not configured. Must not raise, but for `InvalidSettingsError` (one of its settings
is invalid), which `harness doctor` reports as it reports any invalid setting; anything else it
raises becomes one failed check naming the channel."""

UnconfiguredReport: TypeAlias = Callable[[], str]
"""What `harness setup <name>` prints when `create` raises `ChannelNotConfiguredError`, for a
platform that can help before its credentials exist (Slack prints the manifest to create the
app from). Without it the command reports the missing setting. Touches no network."""


@dataclass(frozen=True)
class ChannelPlugin:
    """One chat platform, as an entry point of the `harness.channels` group provides it."""

    create: ChannelFactory
    listener: ListenerHook | None = None
    """Only for a platform with a listener of its own; polling is handled for every
    `ResumablePollingChannel` (`channels.polling`)."""
    checks: ChecksHook | None = None
    """Only for a channel with something to check beyond its settings' validity."""
    unconfigured_report: UnconfiguredReport | None = None
    """Only for a platform whose setup can start without credentials."""
