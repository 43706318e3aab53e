"""Which listener receives each channel's messages when webhooks are not used.

`harness poll <channel>` and `harness up` ask here: a polling channel in polling mode gets a
`PollingListener`; a channel whose plug-in has a `listener` hook gets what the hook builds
(Slack with SLACK_APP_TOKEN: a `SocketModeListener`). The listeners share only the
`channels.listener` protocol and never import each other.
"""

from __future__ import annotations

import logging
import threading

from channels.base import Channel, ResumablePollingChannel
from channels.errors import ChannelNotConfiguredError
from channels.listener import Listener
from channels.plugin import ListenerFactory
from channels.polling import PollingListener, polls
from channels.registry import get_channel, names, plugin
from harness.errors import ConfigurationError
from harness.runtime import Runtime

log = logging.getLogger(__name__)


def listener_channels() -> list[str]:
    """The configured channels that receive messages through a process of ours instead of
    webhooks: polling channels in polling mode, and those whose plug-in's `listener` hook
    gives a listener (Slack with SLACK_APP_TOKEN).
    A channel with an invalid setting is logged and left out. Touches no network."""
    found = []
    for name in names():
        try:
            channel = get_channel(name)
        except ChannelNotConfiguredError:
            continue
        except ConfigurationError as exc:
            log.warning("channel %s is misconfigured: %s", name, exc)
            continue
        if polls(channel) or _own_listener(name, channel) is not None:
            found.append(name)
    return found


def listener_for(name: str, runtime: Runtime) -> Listener:
    """The listener of channel `name`. Raises `ConfigurationError` when the channel is
    configured for webhooks, or a `ChannelError`."""
    channel = get_channel(name)
    if isinstance(channel, ResumablePollingChannel) and polls(channel):
        return PollingListener(runtime, channel)
    own = _own_listener(name, channel)
    if own is not None:
        return own(runtime)
    raise ConfigurationError(
        f"channel {name!r} receives webhooks; nothing to poll (for Telegram set "
        "TELEGRAM_MODE=polling, for Slack set SLACK_APP_TOKEN)"
    )


def run_listener(name: str, runtime: Runtime, stop: threading.Event) -> None:
    """Receive messages for channel `name` until `stop` is set (see `listener_for`)."""
    listener_for(name, runtime).run(stop)


def _own_listener(name: str, channel: Channel) -> ListenerFactory | None:
    """What the plug-in of channel `name` says about listening, if it has a hook."""
    loaded = plugin(name)
    return None if loaded is None or loaded.listener is None else loaded.listener(channel)
