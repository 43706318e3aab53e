"""Chat platforms: webhooks in, replies out.

Each platform lives in `channels/<name>/` (or in a package of its own) and implements `Channel`
(see `channels.base`); `channels.registry` creates them by name, from the plug-ins it loads
(`channels.plugin`). Nothing outside this package knows a platform's details. Typical use:

    load_plugins()                                # once, where the process is assembled
    channel = get_channel("telegram")
    channel.verify(headers, body)                 # WebhookRejected -> answer its status
    inbound = channel.transform(json.loads(body), headers)
    # Publish -> publish inbound.event; Respond -> answer inbound.body; Ignored -> answer 200
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy_names import lazy_names

if TYPE_CHECKING:
    from channels.base import (
        Channel,
        ChunkSent,
        Ignored,
        Inbound,
        PollingChannel,
        Publish,
        Respond,
    )
    from channels.errors import (
        ChannelError,
        ChannelNotConfiguredError,
        PlatformError,
        UnknownChannelError,
        WebhookRejected,
    )
    from channels.plugin import ChannelPlugin
    from channels.registry import (
        configured_channels,
        create_channel,
        get_channel,
        load_plugins,
        names,
        register,
    )

__all__ = [
    "Channel",
    "ChannelError",
    "ChannelNotConfiguredError",
    "ChannelPlugin",
    "ChunkSent",
    "Ignored",
    "Inbound",
    "PlatformError",
    "PollingChannel",
    "Publish",
    "Respond",
    "UnknownChannelError",
    "WebhookRejected",
    "configured_channels",
    "create_channel",
    "get_channel",
    "load_plugins",
    "names",
    "register",
]

# Loaded on first use: importing one platform's settings (`channels.telegram.settings`, as the
# sidecar's environment does) does not load the registry, every plug-in and the Redis client.
__getattr__ = lazy_names(
    __name__,
    {
        "Channel": "base",
        "ChunkSent": "base",
        "Ignored": "base",
        "Inbound": "base",
        "PollingChannel": "base",
        "Publish": "base",
        "Respond": "base",
        "ChannelError": "errors",
        "ChannelNotConfiguredError": "errors",
        "PlatformError": "errors",
        "UnknownChannelError": "errors",
        "WebhookRejected": "errors",
        "ChannelPlugin": "plugin",
        "configured_channels": "registry",
        "create_channel": "registry",
        "get_channel": "registry",
        "load_plugins": "registry",
        "names": "registry",
        "register": "registry",
    },
)
