"""Benchmark of the heartbeat: tokens sent to the model over a simulated month of light use.

A person's agent notes a few facts a day (3 to 5 notes of about 120 bytes, at random times
between 08:00 and 22:00); the heartbeat ticks every 30 minutes for `--days` days.

- **Ours:** the real `plan_distillation` and `apply_distillation` of `agent-heartbeat` on a
  temporary workspace with the default thresholds (4,096 new bytes, or 8 h with at least one
  new entry); the model is a stand-in that appends one line per new note to MEMORY.md.
- **Original (Utah):** on every tick, distil when today's log is over 4,096 bytes or 8 h have
  passed since the last run, sending MEMORY.md and the last 7 days of logs each time, with
  the same prompt and the same stand-in model.

Tokens are estimated as characters / 4 (system prompt plus request), as the harness does.

Usage: python -m bench.memory [--days 30] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from harness.agent.memory.distill import DISTILL_PROMPT, Thresholds, render_request
from harness.agent.memory.heartbeat import apply_distillation, plan_distillation
from harness.agent.memory.notes import MEMORY_FILE, append_note, log_path

TICK = timedelta(minutes=30)
START = datetime(2027, 3, 1, tzinfo=UTC)
SEED_MEMORY = "# Memory\n\nLong-lived facts distilled from the daily logs.\n"
TOPICS = ("prefers", "met", "booked", "decided", "likes", "is allergic to", "moved", "started")


@dataclass
class Tally:
    """Model calls and estimated input tokens of one strategy."""

    calls: int = 0
    tokens: int = 0
    memory_bytes: int = 0
    idle_calls: int = 0  # calls made when nothing had been noted since the last one

    def add(self, request: str) -> None:
        self.calls += 1
        self.tokens += (len(DISTILL_PROMPT) + len(request)) // 4


def _notes_for(day: date, rng: random.Random) -> list[tuple[datetime, str]]:
    notes = []
    for _ in range(rng.randint(3, 5)):
        minute = rng.randint(8 * 60, 22 * 60 - 1)
        at = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(minutes=minute)
        topic = rng.choice(TOPICS)
        text = f"The user {topic} something worth keeping, note {rng.randint(0, 10**6)}. " * 2
        notes.append((at, text.strip()))
    return sorted(notes)


def _stand_in_model(memory: str, notes: str) -> str:
    """MEMORY.md plus one line per note it does not hold yet (both strategies' MEMORY.md
    therefore grow alike, by the notes seen so far)."""
    facts = [f"- {line.split('. ')[0]}\n" for line in notes.splitlines() if line.startswith("The")]
    return memory.rstrip("\n") + "\n" + "".join(f for f in facts if f not in memory)


def _original_request(workspace: Path, now: datetime) -> str:
    memory = (workspace / MEMORY_FILE).read_text()
    logs = []
    for back in range(7):
        path = log_path(workspace, now.date() - timedelta(days=back))
        if path.exists():
            logs.append(path.read_text())
    return f"{memory}\n\n" + "\n\n".join(reversed(logs))


def simulate(days: int, seed: int) -> tuple[Tally, Tally]:
    """Run both strategies over the same notes; returns (ours, original)."""
    rng = random.Random(seed)
    schedule = [n for d in range(days) for n in _notes_for(START.date() + timedelta(days=d), rng)]
    ours, original = Tally(), Tally()
    thresholds = Thresholds()
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        mine, theirs = Path(a), Path(b)
        for workspace in (mine, theirs):
            (workspace / MEMORY_FILE).write_text(SEED_MEMORY)
        last_original = START
        noted_since_original = False
        pending = list(schedule)
        now = START
        while now < START + timedelta(days=days):
            now += TICK
            while pending and pending[0][0] <= now:
                at, text = pending.pop(0)
                append_note(mine, text, at)
                append_note(theirs, text, at)
                noted_since_original = True
            plan = plan_distillation(mine, now, thresholds, force=False)
            if plan.due:
                new_notes = "\n".join(chunk.text for chunk in plan.pending.chunks)
                ours.add(render_request(plan.memory_text, plan.pending))
                answer = _stand_in_model(plan.memory_text, new_notes)
                apply_distillation(mine, plan, answer, max_shrink=0.5, now=now, run=f"r{now:%s}")
            today = log_path(theirs, now.date())
            big = today.exists() and today.stat().st_size > thresholds.min_bytes
            if big or now - last_original >= thresholds.max_age:
                request = _original_request(theirs, now)
                original.add(request)
                original.idle_calls += not noted_since_original
                noted_since_original = False
                memory = (theirs / MEMORY_FILE).read_text()
                (theirs / MEMORY_FILE).write_text(_stand_in_model(memory, request))
                last_original = now
        ours.memory_bytes = (mine / MEMORY_FILE).stat().st_size
        original.memory_bytes = (theirs / MEMORY_FILE).stat().st_size
    return ours, original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    ours, original = simulate(args.days, args.seed)
    print(f"simulated {args.days} days, a heartbeat every 30 min (seed {args.seed})")
    print("| strategy | model calls | of which with nothing new | input tokens (est.) |")
    print("|---|---|---|---|")
    for name, tally in (("original: 7 days re-read", original), ("harness", ours)):
        print(f"| {name} | {tally.calls} | {tally.idle_calls} | {tally.tokens:,} |")
    print(f"MEMORY.md at the end: {ours.memory_bytes:,} bytes (harness), "
          f"{original.memory_bytes:,} bytes (original)")  # fmt: skip
    print(f"ratio original / harness: {original.tokens / max(ours.tokens, 1):.1f}x tokens, "
          f"{original.calls / max(ours.calls, 1):.1f}x calls")  # fmt: skip


if __name__ == "__main__":
    main()
