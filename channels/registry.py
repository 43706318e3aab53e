"""Channel names to factories.

The channels come from plug-ins (`channels.plugin`): the process that assembles the fleet calls
`load_plugins()` once, which imports every entry point of the `harness.channels` group, the
built-in telegram and slack included. Importing this module registers and installs nothing.
Tests and embedders may also `register()` a factory by hand; it takes precedence over a
plug-in of the same name until `reset()`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from importlib.metadata import EntryPoint
from typing import cast

from channels.base import Channel
from channels.errors import ChannelNotConfiguredError, UnknownChannelError
from channels.plugin import ChannelFactory, ChannelPlugin
from harness import plugins
from harness.errors import ConfigurationError

log = logging.getLogger(__name__)

_lock = threading.Lock()
_plugins: dict[str, ChannelPlugin] = {}
_factories: dict[str, ChannelFactory] = {}
_instances: dict[str, Channel] = {}


def load_plugins(found: Iterable[EntryPoint] | None = None) -> list[str]:
    """Load the channel plug-ins (`found`, default every `harness.channels` entry point
    installed) in place of those loaded before, and return their names. An entry point that
    fails to import, or names something that is not a `ChannelPlugin`, is left out with one
    log line naming it. Never raises for a plug-in's fault."""
    found_plugins = plugins.load(
        plugins.CHANNELS, found, lambda value: isinstance(value, ChannelPlugin), "a ChannelPlugin"
    )
    loaded = {plugin.name: cast(ChannelPlugin, plugin.value) for plugin in found_plugins}
    with _lock:
        _plugins.clear()
        _plugins.update(loaded)
        _instances.clear()
    return sorted(loaded)


def plugin(name: str) -> ChannelPlugin | None:
    """The loaded plug-in called `name`, or None."""
    with _lock:
        return _plugins.get(name)


def register(name: str, factory: ChannelFactory) -> None:
    """Register (or replace) the factory for `name` and forget any cached instance."""
    with _lock:
        _factories[name] = factory
        _instances.pop(name, None)


def names() -> list[str]:
    """Every registered channel name, sorted, whether or not it is configured."""
    with _lock:
        return sorted(set(_plugins) | set(_factories))


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
    """Forget registrations made with `register` and every cached instance (for tests); the
    loaded plug-ins stay."""
    with _lock:
        _factories.clear()
        _instances.clear()


def _factory(name: str) -> ChannelFactory:
    with _lock:
        factory = _factories.get(name)
        loaded = _plugins.get(name)
    if factory is not None:
        return factory
    if loaded is None:
        raise UnknownChannelError(name, names())
    return loaded.create
