"""The outcome of one `harness doctor` check, shared by the modules that run them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail"]
MARKS: dict[Status, str] = {"ok": "✔", "warn": "!", "fail": "✘"}


@dataclass(frozen=True)
class Check:
    """One check's outcome: `detail` says what was found, `fix` what to do when not ok.
    Neither may hold a secret."""

    name: str
    status: Status
    detail: str
    fix: str = ""
