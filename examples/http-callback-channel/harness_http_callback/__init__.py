"""A generic chat channel over HTTP, shipped as a plug-in of its own.

Any program can talk to the agent through it: it POSTs a signed JSON message to the fleet's
`/webhooks/http-callback`, and the agent's replies are POSTed, signed the same way, to
HTTP_CALLBACK_URL. Installing this package is all it takes: the fleet finds `plugin` through
the `harness.channels` entry point (see pyproject.toml).
"""

from __future__ import annotations

from channels.plugin import ChannelPlugin
from harness_http_callback.channel import CHANNEL, HttpCallbackChannel, create_channel
from harness_http_callback.setup import checks, unconfigured_report

plugin = ChannelPlugin(
    create=create_channel, checks=checks, unconfigured_report=unconfigured_report
)

__all__ = ["CHANNEL", "HttpCallbackChannel", "create_channel", "plugin"]
