"""A third-party channel package, installed for one test: a `*.dist-info` directory declaring
`harness.channels` entry points, put on `sys.path` where `importlib.metadata` finds installed
packages, so `plug_in_channels()` loads it through the same door as a real install.

Its plug-ins: `echo`, never configured, with doctor checks and a setup report of its own;
`broken`, whose checks raise."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from channels.base import Channel
from channels.errors import ChannelNotConfiguredError
from channels.plugin import ChannelPlugin
from harness.checks import Check
from harness.composition import plug_in_channels

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
    dist_info = root / "harness_fake_channels-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: harness-fake-channels\nVersion: 1.0\n"
    )
    lines = [f"{name} = {__name__}:{target}" for name, target in plugins.items()]
    (dist_info / "entry_points.txt").write_text("[harness.channels]\n" + "\n".join(lines) + "\n")
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        sys.path.remove(str(root))
        plug_in_channels()
