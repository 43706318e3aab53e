"""Benchmark of delegation: the harness time of a turn that delegates once to a named agent,
against the same turn without delegation, measured in the same run.

Both turns run on a real Redis (in-process kicks), talking through the Anthropic SDK to the
scripted model server, which answers at once (latency 0). The plain turn calls one tool
(`ls`) and answers: two model calls. The delegating turn calls `delegate_to_helper` instead,
whose child run (a named agent) answers in one model call, then answers: three model calls
and two runs. Harness time = wall time - the model's time at the wire. Rounds interleave the
two, so the machine's noise falls on both. The aim: the delegating turn costs at most one
extra turn's worth (ratio <= 2).

Usage: python -m bench.delegation [--rounds 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import redis

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message, run_subagent
from harness.fleet.embedded_redis import EmbeddedRedis
from harness.llm.guard import forbid_real_model_calls
from harness.runtime import Runtime, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings
from tests.fakes.model_server import ModelServer, Reply

HELPER = "---\ndescription: Answers small questions.\ntools: [read]\n---\nYou help.\n"


def _turn(rt: Runtime, server: ModelServer, session: str, replies: list[Reply]) -> float:
    """The harness time (s) of one turn answering with `replies`."""
    server.script(*replies)
    server.busy_seconds = 0.0
    data = {
        "message": "go", "session_key": session, "channel": "bench",
        "sender": {"id": "b"}, "destination": {"chat_id": session},
    }  # fmt: skip
    start = time.perf_counter()
    publish({"name": "agent.message.received", "data": data}, runtime=rt)
    drain(rt)
    return time.perf_counter() - start - server.busy_seconds


def measure(url: str, rounds: int) -> dict[str, list[float]]:
    """Harness seconds per turn, plain and delegating, one value of each per round."""
    out: dict[str, list[float]] = {"plain": [], "delegating": []}
    with ModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "workspace"
        (workspace / "agents" / "helper").mkdir(parents=True)
        (workspace / "agents" / "helper" / "AGENT.md").write_text(HELPER)
        settings = Settings(
            _env_file=None, agent_workspace=workspace, anthropic_api_key=server.api_key,  # type: ignore[call-arg,arg-type]
            anthropic_base_url=server.url, model_calls="inline", agent_approval="off",
        )  # fmt: skip
        set_agent_deps(build_deps(settings))
        registry = FunctionRegistry()
        registry.register(handle_message)
        registry.register(run_subagent)
        client = redis.Redis.from_url(url, decode_responses=True)
        rt = Runtime(
            redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("benchdeleg")
        )
        rt.register_functions()
        for round_ in range(rounds + 1):  # the first round warms up, and is dropped
            plain = _turn(rt, server, f"plain-{round_}", [
                Reply.tool("ls", {"path": "."}), Reply.answer("done"),
            ])  # fmt: skip
            delegating = _turn(rt, server, f"deleg-{round_}", [
                Reply.tool("delegate_to_helper", {"task": "list the workspace"}),
                Reply.answer("two files"), Reply.answer("done"),
            ])  # fmt: skip
            if round_:
                out["plain"].append(plain)
                out["delegating"].append(delegating)
        set_agent_deps(None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    args = parser.parse_args()
    forbid_real_model_calls()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        measured = measure(server.url, args.rounds)
    plain = statistics.median(measured["plain"]) * 1000
    delegating = statistics.median(measured["delegating"]) * 1000
    print(f"harness time per turn, median of {args.rounds} rounds (real Redis, SDK, latency 0):")
    print(f"  plain turn (one tool call, 2 model calls):           {plain:8.2f} ms")
    print(f"  delegating turn (one named agent, 3 calls, 2 runs):  {delegating:8.2f} ms")
    print(f"  ratio delegating / plain: {delegating / plain:.2f} (aim: at most 2)")
    if args.json:
        args.json.write_text(json.dumps(measured))


if __name__ == "__main__":
    main()
