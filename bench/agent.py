"""Benchmark of the agent: context size over a long conversation, and the time our code adds.

1. Tokens sent per turn over a scripted 200-turn conversation in which every turn runs a tool
   that returns 20 KB, with and without pruning and compaction (the loop's real hooks; the
   summary is a fixed text, since only the size matters here).
2. The wall time the harness adds per iteration beyond the model call: the agent runs on a
   real Redis (in-process kicks), talking through the Anthropic SDK to the scripted model
   server, which answers at once. The model's time is measured at the wire (the server's own
   time per request); our time = run wall time - model time, so it includes converting and
   sending the history.

Usage: python -m bench.agent [--turns 200] [--iterations 40] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import redis

from harness.agent.compaction import needs_compaction, plan_compaction
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.agent.loop import default_transform, no_compaction, run_agent_loop
from harness.agent.session import summary_message
from harness.agent.transcript import estimate_tokens, repair
from harness.fleet.embedded_redis import EmbeddedRedis
from harness.llm.guard import forbid_real_model_calls
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolResult, ToolSpec
from harness.runtime import Runtime, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings
from tests.fakes.model_server import ModelServer, Reply

TOOL_OUTPUT = "x" * 20_000
CONTEXT_TOKENS = 150_000


def conversation_tokens(turns: int, managed: bool) -> list[int]:
    """Estimated tokens sent on each think call over `turns` user turns."""
    sent: list[int] = []
    history: list[Message] = []

    def think(messages: Sequence[Message], tools: Sequence[ToolSpec], note: str) -> AssistantTurn:
        sent.append(estimate_tokens(messages))
        if messages[-1].role == "user":
            call = ToolCall(id=f"c{len(sent)}", name="read", arguments={"path": "big.txt"})
            return AssistantTurn(tool_calls=(call,), stop_reason="tool_use", model="m")
        return AssistantTurn(text="Here is what the file says.", stop_reason="end", model="m")

    def compact(conversation: list[Message], forced: bool) -> list[Message]:
        if not needs_compaction(conversation, context_tokens=CONTEXT_TOKENS):
            return conversation
        plan = plan_compaction(conversation)
        return [summary_message("## Goal\nkeep going"), *plan.recent] if plan.old else conversation

    for turn in range(turns):
        history.append(Message.user(f"turn {turn}: read big.txt and tell me about it"))
        run_agent_loop(
            history, [ToolSpec(name="read", description="read a file")], think=think,
            act=lambda call: ToolResult(tool_call_id=call.id, content=TOOL_OUTPUT),
            steer=lambda: [], record=history.append,
            transform=default_transform if managed else repair,
            compact=compact if managed else no_compaction,
        )  # fmt: skip
        if managed:
            history = compact(history, False)
    return sent


def harness_overhead(url: str, iterations: int, rounds: int) -> tuple[list[float], list[float]]:
    """Per-iteration (our time, model call time) in seconds, one value per round."""
    ours, model = [], []
    with ModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            _env_file=None, agent_workspace=Path(tmp), anthropic_api_key=server.api_key,  # type: ignore[call-arg]
            anthropic_base_url=server.url, agent_max_iterations=iterations + 1,
            model_calls="inline",  # one thread drains the run: the call on it, as measured before
        )  # fmt: skip
        set_agent_deps(build_deps(settings))
        registry = FunctionRegistry()
        registry.register(handle_message)
        client = redis.Redis.from_url(url, decode_responses=True)
        rt = Runtime(
            redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("benchagent")
        )
        rt.register_functions()
        for round_ in range(rounds):
            server.script(
                *[Reply.tool("ls", {"path": "."}) for _ in range(iterations)], Reply.answer("done")
            )
            server.busy_seconds = 0.0
            start = time.perf_counter()
            session = f"bench-{round_}"
            data = {
                "message": "list the workspace",
                "session_key": session,
                "channel": "bench",
                "sender": {"id": "b"},
                "destination": {"chat_id": session},
            }
            publish({"name": "agent.message.received", "data": data}, runtime=rt)
            drain(rt)
            wall = time.perf_counter() - start
            calls = iterations + 1
            ours.append((wall - server.busy_seconds) / calls)
            model.append(server.busy_seconds / calls)
        set_agent_deps(None)
    return ours, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    args = parser.parse_args()
    forbid_real_model_calls()
    raw = conversation_tokens(args.turns, managed=False)
    managed = conversation_tokens(args.turns, managed=True)
    print(f"tokens sent per think call over {args.turns} turns (tool output 20 KB each):")
    print(f"{'':28} {'median':>10} {'max':>10} {'last':>10} {'total':>12}")
    for name, values in (("no pruning, no compaction", raw), ("pruning + compaction", managed)):
        median, top, last, total = statistics.median(values), max(values), values[-1], sum(values)
        print(f"{name:28} {median:10.0f} {top:10d} {last:10d} {total:12d}")
    print(f"total tokens, managed / unmanaged: {sum(managed) / sum(raw):.3f}")
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        ours, model = harness_overhead(server.url, args.iterations, args.rounds)
    ours_ms, model_ms = statistics.median(ours) * 1000, statistics.median(model) * 1000
    print(f"per iteration, {args.rounds} runs of {args.iterations + 1} thinks (real Redis, SDK):")
    print(f"  harness code (steps, session, tools, prompt): median {ours_ms:.2f} ms")
    print(f"  model call (the scripted server, at the wire): median {model_ms:.2f} ms")
    print(f"  ratio harness / model call: {ours_ms / model_ms:.2f}")
    if args.json:
        measured = {"tokens_raw": raw, "tokens_managed": managed, "iteration_harness_s": ours,
                    "iteration_model_s": model}  # fmt: skip
        args.json.write_text(json.dumps(measured))


if __name__ == "__main__":
    main()
