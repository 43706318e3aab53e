"""Channels plug in through the `harness.channels` entry points, loaded when asked, never on
import; a broken plug-in is one log line, not a crash."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint

import pytest

from channels import registry
from channels.agent_seam import ChannelPlatforms
from channels.plugin import ChannelPlugin
from channels.telegram.channel import TelegramChannel
from harness import plugins
from harness.agent import platforms
from harness.composition import plug_in_channels

GROUP = plugins.CHANNELS
ECHO_CHANNELS: list[TelegramChannel] = []
"""The channel the `echo` plug-in creates, set by the test that loads it."""

ECHO_PLUGIN = ChannelPlugin(create=lambda: ECHO_CHANNELS[0])
NOT_A_PLUGIN = "a string where a ChannelPlugin belongs"


def entry_point(name: str, target: str) -> EntryPoint:
    """An entry point of the channels group, as an installed package would declare it."""
    return EntryPoint(name, f"{__name__}:{target}", GROUP)


@pytest.fixture(autouse=True)
def builtin_plugins_back() -> Iterator[None]:
    """Each test may load other plug-ins; the process's own come back afterwards."""
    registry.reset()
    yield
    registry.reset()
    plug_in_channels()


def test_registry_import_registers_and_installs_nothing() -> None:
    # Given a fresh interpreter
    code = (
        "import channels, channels.registry as r\n"
        "from harness.agent import platforms\n"
        "print(r.names(), platforms.installed())\n"
    )

    # When it imports the channels package and its registry
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True
    )

    # Then no channel is registered and nothing is plugged into the agent
    assert done.stdout.strip() == "[] None", done.stderr


def test_plug_in_channels_loads_the_builtin_channels_through_their_entry_points() -> None:
    # Given the project's declared channel entry points
    declared = [ep.name for ep in plugins.declared(GROUP)]

    # When the process plugs in its channels
    loaded = plug_in_channels()

    # Then telegram and slack come through that door, and chat turns reach them
    assert declared[:2] == ["slack", "telegram"], f"the project's own, by name: {declared}"
    assert {"telegram", "slack"} <= set(loaded)
    assert isinstance(platforms.installed(), ChannelPlatforms)


def test_registry_serves_a_channel_from_a_third_party_entry_point(
    telegram: TelegramChannel,
) -> None:
    # Given an installed package declaring an `echo` channel
    ECHO_CHANNELS[:] = [telegram]

    # When the plug-ins are loaded
    loaded = registry.load_plugins([entry_point("echo", "ECHO_PLUGIN")])

    # Then the registry serves it by name like a built-in
    assert loaded == ["echo"]
    assert registry.get_channel("echo") is telegram
    assert registry.plugin("echo") is ECHO_PLUGIN


def test_registry_leaves_out_a_plugin_that_fails_to_import(
    telegram: TelegramChannel, caplog: pytest.LogCaptureFixture
) -> None:
    # Given one plug-in whose module does not import, and a good one
    ECHO_CHANNELS[:] = [telegram]
    broken = EntryPoint("broken", "harness_no_such_package.channel:plugin", GROUP)

    # When the plug-ins are loaded
    with caplog.at_level(logging.ERROR, logger="harness.plugins"):
        loaded = registry.load_plugins([broken, entry_point("echo", "ECHO_PLUGIN")])

    # Then the good one is served, and the broken one is one error line naming its entry point
    assert loaded == ["echo"]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1, lines
    assert "broken = harness_no_such_package.channel:plugin" in lines[0]
    assert "ModuleNotFoundError" in lines[0]


def test_registry_leaves_out_an_entry_point_that_is_not_a_channel_plugin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given an entry point naming something else than a ChannelPlugin
    odd = entry_point("odd", "NOT_A_PLUGIN")

    # When the plug-ins are loaded
    with caplog.at_level(logging.ERROR, logger="harness.plugins"):
        loaded = registry.load_plugins([odd])

    # Then it is not a channel, and the log says why in one line
    assert loaded == []
    assert "odd" not in registry.names()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "not a ChannelPlugin" in lines[0], lines
