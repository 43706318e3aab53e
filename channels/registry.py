"""Channel names to factories.

Built-in channels are named here by import path and imported on first use, so importing the
registry does not import slack_sdk or httpx. A new platform (say Discord) is a package
`channels/discord/` exposing a factory plus one line in `_BUILTIN`, or a `register()` call.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable
from typing import cast

from channels.base import Channel
from channels.errors import ChannelNotConfiguredError, UnknownChannelError
from harness.errors import ConfigurationError

log = logging.getLogger(__name__)

ChannelFactory = Callable[[], Channel]
"""Builds a channel from the environment; raises `ChannelNotConfiguredError` when its settings
are missing."""

_BUILTIN: dict[str, str] = {
    "telegram": "channels.telegram.channel:create_channel",
    "slack": "channels.slack.channel:create_channel",
}

_lock = threading.Lock()
_factories: dict[str, ChannelFactory] = {}
_instances: dict[str, Channel] = {}


def register(name: str, factory: ChannelFactory) -> None:
    """Register (or replace) the factory for `name` and forget any cached instance."""
    with _lock:
        _factories[name] = factory
        _instances.pop(name, None)


def names() -> list[str]:
    """Every registered channel name, sorted, whether or not it is configured."""
    with _lock:
        return sorted(set(_BUILTIN) | set(_factories))


def create_channel(name: str) -> Channel:
    """A new channel instance built from the environment. Raises `UnknownChannelError` or
    `ChannelNotConfiguredError`."""
    return _factory(name)()


def get_channel(name: str) -> Channel:
    """The process-wide instance of a channel, created on first use (thread-safe). Raises like
    `create_channel`; a failed creation is not cached."""
    with _lock:
        cached = _instances.get(name)
    if cached is not None:
        return cached
    channel = create_channel(name)
    with _lock:
        return _instances.setdefault(name, channel)


def channel_or_none(name: str) -> Channel | None:
    """The registered, configured channel called `name`, or None (logged at debug level for an
    unknown channel, at warning level for a misconfigured one). Never raises."""
    try:
        return get_channel(name)
    except UnknownChannelError:
        log.debug("no channel %r registered; nothing to do on the platform side", name)
    except ConfigurationError as exc:
        log.warning("channel %r is not usable: %s", name, exc)
    return None


def configured_channels() -> list[str]:
    """The names of the channels whose settings are present, i.e. that `create_channel` can
    build. Touches no network."""
    found = []
    for name in names():
        try:
            get_channel(name)
        except ChannelNotConfiguredError:
            continue
        found.append(name)
    return found


def reset() -> None:
    """Forget registrations made with `register` and every cached instance (for tests)."""
    with _lock:
        _factories.clear()
        _instances.clear()


def _factory(name: str) -> ChannelFactory:
    with _lock:
        factory = _factories.get(name)
    if factory is not None:
        return factory
    target = _BUILTIN.get(name)
    if target is None:
        raise UnknownChannelError(name, names())
    module_name, _, attribute = target.partition(":")
    return cast(ChannelFactory, getattr(importlib.import_module(module_name), attribute))


def _plug_into_the_agent() -> None:
    """Chat turns reach the channels through `harness.agent.platforms` (the agent does not
    import `channels`): importing the registry installs them there."""
    from channels.agent_seam import ChannelPlatforms
    from harness.agent import platforms

    platforms.install(ChannelPlatforms(channel_or_none))


_plug_into_the_agent()
