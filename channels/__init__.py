"""Chat platforms: webhooks in, replies out.

Each platform lives in `channels/<name>/` and implements `Channel` (see `channels.base`);
`channels.registry` creates them by name. Nothing outside this package knows a platform's
details. Typical use:

    channel = get_channel("telegram")
    channel.verify(headers, body)                 # WebhookRejected -> answer its status
    inbound = channel.transform(json.loads(body), headers)
    # Publish -> publish inbound.event; Respond -> answer inbound.body; Ignored -> answer 200
"""

from __future__ import annotations

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
from channels.registry import (
    configured_channels,
    create_channel,
    get_channel,
    names,
    register,
)

__all__ = [
    "Channel",
    "ChannelError",
    "ChannelNotConfiguredError",
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
    "names",
    "register",
]
