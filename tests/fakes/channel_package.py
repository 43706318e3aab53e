"""A third-party channel package, installed for one test: a `*.dist-info` directory declaring
`harness.channels` entry points, put on `sys.path` where `importlib.metadata` finds installed
packages, so `plug_in_channels()` loads it through the same door as a real install.

Its plug-ins: `echo`, never configured, with doctor checks and a setup report of its own;
`broken`, whose checks raise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from channels.base import Channel
from channels.errors import ChannelNotConfiguredError
from channels.plugin import ChannelPlugin
from harness.checks import Check
from harness.composition import plug_in_channels
from tests.fakes.installed_package import installed_package

ECHO_REPORT = "Echo: ECHO_TOKEN is not set. Create the bot at https://echo.example first."


def _not_configured() -> Channel:
    raise ChannelNotConfiguredError("ECHO_TOKEN is not set")


def _echo_checks(offline: bool) -> list[Check]:
    return [Check("echo", "warn", f"checked with offline={offline}", "set ECHO_TOKEN")]


def _broken_checks(offline: bool) -> list[Check]:
    raise RuntimeError("the echo API moved")


ECHO_PLUGIN = ChannelPlugin(
    create=_not_configured, checks=_echo_checks, unconfigured_report=lambda: ECHO_REPORT
)
BROKEN_PLUGIN = ChannelPlugin(create=_not_configured, checks=_broken_checks)


@contextmanager
def installed_channels(root: Path, **plugins: str) -> Iterator[None]:
    """Install a package under `root` declaring each `name=ATTRIBUTE` of this module as a
    channel plug-in, for the duration of the block; afterwards the process's own plug-ins are
    loaded again."""
    entries = {name: f"{__name__}:{target}" for name, target in plugins.items()}
    with installed_package(
        root, "harness-fake-channels", "harness.channels", entries, plug_in_channels
    ):
        yield
