"""`bench/stream_cpu.py`: each provider's async call and its floor read the same long answer
from the scripted model server, and both are timed."""

from __future__ import annotations

import asyncio

from bench.stream_cpu import run


def test_the_stream_cpu_bench_reads_every_event_of_the_long_answer() -> None:
    # Given answers of 20 text deltas
    # When one round of one call each is measured
    results = asyncio.run(run(deltas=20, calls=1, rounds=1))
    # Then the floor read every event of each API's answer: the deltas plus the framing
    # events (Anthropic: start, ping, block start and stop, delta, stop; OpenAI: role and
    # finish chunks' framing, usage)
    assert set(results) == {"anthropic", "openai"}
    assert results["anthropic"]["events"] == 20 + 6, results["anthropic"]
    assert results["openai"]["events"] == 20 + 3, results["openai"]
    # And both the call and its floor have a CPU time and a ratio
    for api, figures in results.items():
        assert figures["floor_ms"] > 0 and figures["call_ms"] > 0, (api, figures)
        assert figures["ratio"] == figures["call_ms"] / figures["floor_ms"], (api, figures)
