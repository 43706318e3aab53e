"""Benchmark of long sessions: the harness's time for one turn as the session grows.

One turn with two model calls (the model lists the workspace, then answers) runs in a
session that already holds N earlier turns of the same shape, on a real Redis (in-process
kicks) through the Anthropic SDK to the scripted model server, which answers at once. The
model's time is measured at the wire (the server's own time per request); everything else is
the harness's: the steps, the session file, pruning, the SDK's conversion and sending of the
history. The floor is the same turn in a session of `--short` earlier turns, measured in the
same run; the aim is at most 2x at `--long` earlier turns.

Usage: python -m bench.sessions [--short 10] [--long 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import redis

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.agent.session import SessionLine, SessionStore
from harness.fleet.embedded_redis import EmbeddedRedis
from harness.llm.guard import forbid_real_model_calls
from harness.llm.types import Message, ToolCall, ToolResult
from harness.runtime import Runtime, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings
from tests.fakes.model_server import ModelServer, Reply

LISTING = "\n".join(f"file-{i:02d}.txt" for i in range(12))


def seed(store: SessionStore, session_key: str, turns: int) -> None:
    """Write `turns` earlier turns: a question, a tool call, its result, an answer."""
    lines = []
    for i in range(turns):
        call = ToolCall(id=f"toolu_seed{i:06d}", name="ls", arguments={"path": "."})
        for message in (
            Message.user(f"turn {i}: what is in the workspace now?"),
            Message.assistant(tool_calls=(call,)),
            Message.tool(ToolResult(tool_call_id=call.id, content=LISTING)),
            Message.assistant(f"The workspace holds twelve files (turn {i})."),
        ):
            lines.append(SessionLine(message=message, run_id=f"seed-{i}"))
    store.append(session_key, lines)


def turn_seconds(
    url: str, sizes: tuple[int, ...], rounds: int, workspace: Path
) -> dict[int, tuple[list[float], list[float]]]:
    """For each session size, per round: (harness seconds, model seconds at the wire) of one
    two-call turn. The sizes take turns round by round, so they share the machine's noise."""
    out: dict[int, tuple[list[float], list[float]]] = {size: ([], []) for size in sizes}
    with ModelServer() as server:
        settings = Settings(
            _env_file=None, agent_workspace=workspace, anthropic_api_key=server.api_key,  # type: ignore[call-arg]
            anthropic_base_url=server.url, model_calls="inline", agent_context_tokens=2_000_000,
        )  # fmt: skip
        deps = build_deps(settings)
        set_agent_deps(deps)
        registry = FunctionRegistry()
        registry.register(handle_message)
        client = redis.Redis.from_url(url, decode_responses=True)
        rt = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("bs"))
        rt.register_functions()
        for size in sizes:
            seed(deps.sessions, f"bench-{size}", size)
        for round_ in range(rounds + 1):  # the first round warms caches up
            for size in sizes:
                server.script(Reply.tool("ls", {"path": "."}), Reply.answer("done"))
                server.busy_seconds = 0.0
                session = f"bench-{size}"
                data = {
                    "message": f"round {round_}: list the workspace",
                    "session_key": session,
                    "channel": "bench",
                    "sender": {"id": "b"},
                    "destination": {"chat_id": session},
                }
                start = time.perf_counter()
                publish({"name": "agent.message.received", "data": data}, runtime=rt)
                drain(rt)
                wall = time.perf_counter() - start
                if round_:
                    out[size][0].append(wall - server.busy_seconds)
                    out[size][1].append(server.busy_seconds)
        set_agent_deps(None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", type=int, default=10)
    parser.add_argument("--long", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    forbid_real_model_calls()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        results = turn_seconds(server.url, (args.short, args.long), args.rounds, Path(tmp))
    print(f"one turn, two model calls, {args.rounds} rounds (real Redis, Anthropic SDK):")
    print(f"{'earlier turns':>14} {'harness ms':>11} {'model ms (wire)':>16}")
    for earlier, (ours, model) in results.items():
        ours_ms, model_ms = statistics.median(ours) * 1000, statistics.median(model) * 1000
        print(f"{earlier:14d} {ours_ms:11.1f} {model_ms:16.1f}")
    short = statistics.median(results[args.short][0])
    long = statistics.median(results[args.long][0])
    print(f"harness time at {args.long} / at {args.short} earlier turns: {long / short:.2f}x")


if __name__ == "__main__":
    main()
