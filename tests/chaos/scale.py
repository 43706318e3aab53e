"""The size of the chaos suite's scenarios: `CHAOS_SCALE=ci` (the default, minutes on two
cores) or `full` (the numbers of issue 18: 200 conversations, 1,000 sessions x 5 messages)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    """How many conversations and messages each scenario sends, and how many workers run."""

    name: str
    workers: int
    kill_chats: int
    kill_messages: int
    kills: int
    redis_chats: int
    redeliver_chats: int
    fault_chats: int
    load_sessions: int
    load_messages: int
    fuzz_examples: int


SCALES = {
    "ci": Scale(
        name="ci", workers=2, kill_chats=24, kill_messages=3, kills=3, redis_chats=16,
        redeliver_chats=16, fault_chats=20, load_sessions=40, load_messages=5,
        fuzz_examples=120,
    ),
    "full": Scale(
        name="full", workers=3, kill_chats=200, kill_messages=3, kills=10, redis_chats=100,
        redeliver_chats=100, fault_chats=100, load_sessions=1000, load_messages=5,
        fuzz_examples=2000,
    ),
}  # fmt: skip


def current() -> Scale:
    """The scale `CHAOS_SCALE` names; an unknown name is an error that lists the known ones."""
    name = os.environ.get("CHAOS_SCALE", "ci").strip().lower() or "ci"
    if name not in SCALES:
        raise ValueError(f"CHAOS_SCALE must be one of {sorted(SCALES)}, not {name!r}")
    return SCALES[name]
