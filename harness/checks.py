"""The outcome of one `harness doctor` check, shared by the commands that run them and the
channel plug-ins that provide checks of their own (`channels.plugin.ChannelPlugin.checks`).
It imports nothing of ours, so a channel can name it without reaching into the commands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail"]
MARKS: dict[Status, str] = {"ok": "✔", "warn": "!", "fail": "✘"}
SKIPPED = "skipped (--offline)"
"""The detail of a check that would leave this machine, under `harness doctor --offline`."""


@dataclass(frozen=True)
class Check:
    """One check's outcome: `detail` says what was found, `fix` what to do when not ok.
    Neither may hold a secret."""

    name: str
    status: Status
    detail: str
    fix: str = ""
