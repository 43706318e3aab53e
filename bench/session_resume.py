"""Benchmark of the session file's share of a turn when many chats are in flight: each turn
runs twice, as a turn with an offloaded model call does (before the call, and resumed after
it), and every chat's first execution comes before any chat's resume, as in a wave.

Each of `--chats` chats holds a session of `--lines` earlier lines (a user message and an
answer of about 300 characters each, written as a worker that restarted finds them), and
has had one earlier turn in this process. A measured turn does what `DurableTurn` does with
the store: the first execution saves the person's message (`append_once`), counts the lines
and reads the messages; the resume saves the message again (refused: already there), reads
the messages up to that count and appends the answer (`append_once`). Measured: the
process's CPU per turn (`time.process_time`) over the wave. **Floor:** the same in a wave of
`--floor` chats (fewer than any store keeps), in the same run.

Runs against whichever `harness` is imported: `PYTHONPATH=<checkout>` picks the code.

Usage: python -m bench.session_resume [--chats 400] [--lines 100] [--floor 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from harness.agent.session import SessionLine, SessionStore
from harness.llm.types import Message

TEXT = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 5


def seed(store: SessionStore, chats: int, lines: int) -> None:
    """Write each chat's earlier session directly, then run one turn in each."""
    store.dir.mkdir(parents=True, exist_ok=True)
    earlier = [
        SessionLine(message=Message.user(TEXT) if n % 2 == 0 else Message.assistant(TEXT))
        for n in range(lines)
    ]
    data = b"".join(line.model_dump_json().encode() + b"\n" for line in earlier)
    for chat in range(chats):
        store.path_for(f"chat-{chat}").write_bytes(data)
    wave(store, chats, "warm")


def wave(store: SessionStore, chats: int, tag: str) -> float:
    """One turn in each chat, first executions then resumes: CPU seconds per turn."""
    started = time.process_time()
    counts = []
    for chat in range(chats):
        key, said = f"chat-{chat}", SessionLine(message=Message.user(f"{tag} {chat}"))
        store.append_once(key, said, key=f"event:{tag}:{chat}")
        count = store.count(key)
        store.messages(key, upto=count)
        counts.append(count)
    for chat, count in enumerate(counts):
        key, said = f"chat-{chat}", SessionLine(message=Message.user(f"{tag} {chat}"))
        store.append_once(key, said, key=f"event:{tag}:{chat}")
        store.messages(key, upto=count)
        answer = SessionLine(message=Message.assistant(f"answer {chat}"), run_id=tag)
        store.append_once(key, answer, key=f"{tag}:1")
    return (time.process_time() - started) / chats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=400)
    parser.add_argument("--lines", type=int, default=100)
    parser.add_argument("--floor", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        floor_store = SessionStore(Path(tmp) / "floor")
        wide_store = SessionStore(Path(tmp) / "wide")
        seed(floor_store, args.floor, args.lines)
        seed(wide_store, args.chats, args.lines)
        floors, wides = [], []
        for n in range(args.rounds):  # the two alternate, so a load change hits both
            floors.append(wave(floor_store, args.floor, f"r{n}"))
            wides.append(wave(wide_store, args.chats, f"r{n}"))
    floor, wide = statistics.median(floors), statistics.median(wides)
    print(f"| chats | lines | CPU a turn (ms, median of {args.rounds}) | ratio to the floor |")
    print("|---|---|---|---|")
    print(f"| {args.floor} (floor) | {args.lines} | {floor * 1000:.2f} | 1.0x |")
    print(f"| {args.chats} | {args.lines} | {wide * 1000:.2f} | {wide / floor:.1f}x |")


if __name__ == "__main__":
    main()
