"""The CPU one model call costs the model gateway's event loop for a long streamed answer.

- **Model:** the scripted model server (`tests/fakes/model_server.py`) in this process,
  answering every request with `--deltas` text deltas of 5 characters, then the usage and the
  stop reason, with no delay (the real wire formats: Messages API SSE, Chat Completions
  chunks).
- **Measured:** each provider's `complete_async` (the gateway's path), awaited one call after
  another on one event loop, as this thread's CPU per call (`time.thread_time`, so the fake
  server's threads in the same process are not counted). Whatever code is on `PYTHONPATH` is
  what is measured: run it on two trees to compare them, alternating.
- **Floor:** the same request bytes, with the same headers, sent to the same server from a
  bare `httpx2.AsyncClient` on the same loop, the response read line by line and each `data:`
  line's JSON decoded: what reading the answer costs before anything is built from it. Measured
  in the same run, alternating with the calls, so the ratio holds on a busy machine.

Usage: python -m bench.stream_cpu [--deltas 400] [--calls 40] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2

from harness.llm.anthropic import AnthropicProvider
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import AsyncModelProvider
from harness.llm.types import Message
from tests.fakes.model_server import ModelServer, Reply

CHUNK = 5
"""Characters per text delta, a few tokens' worth, as a real model streams them."""
WARM_UP = 3
"""Calls of each kind made before timing: connections, the SDKs' lazy imports."""
HEADERS_SENT = ("x-api-key", "anthropic-version", "authorization", "content-type")
"""The recorded request's headers the floor sends again: enough for the server to answer."""


async def cpu_ms(call: Callable[[], Awaitable[object]], times: int) -> float:
    """This thread's CPU in ms per awaited `call()`, the mean of `times` after `WARM_UP`."""
    for _ in range(WARM_UP):
        await call()
    started = time.thread_time()
    for _ in range(times):
        await call()
    return 1000 * (time.thread_time() - started) / times


async def measure(
    server: ModelServer, provider: AsyncModelProvider, api: str, calls: int, rounds: int
) -> dict[str, float]:
    """Median over `rounds` of the CPU per call of `provider.complete_async` and of the floor
    that reads the same answer with bare httpx2, alternating; and the events one answer has."""
    messages = [Message.user("write at length")]

    async def provider_call() -> object:
        return await provider.complete_async(system="s", messages=messages)

    await provider_call()
    sent = server.requests[-1]
    url = (
        server.url + "/v1/messages"
        if api == "anthropic"
        else server.openai_url + "/chat/completions"
    )
    headers = {k: v for k, v in sent.headers.items() if k in HEADERS_SENT}
    events = 0
    async with httpx2.AsyncClient(timeout=30.0) as client:

        async def floor_call() -> object:
            nonlocal events
            count = 0
            async with client.stream("POST", url, content=sent.raw, headers=headers) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip() != "[DONE]":
                        json.loads(line[5:])
                        count += 1
            events = count
            return count

        floors: list[float] = []
        calls_ms: list[float] = []
        for _ in range(rounds):
            floors.append(await cpu_ms(floor_call, calls))
            calls_ms.append(await cpu_ms(provider_call, calls))
    floor, call = statistics.median(floors), statistics.median(calls_ms)
    return {"events": events, "floor_ms": floor, "call_ms": call, "ratio": call / floor}


async def run(deltas: int, calls: int, rounds: int) -> dict[str, dict[str, float]]:
    """Both providers against one scripted server; see the module docstring."""
    results: dict[str, dict[str, float]] = {}
    with ModelServer() as server:
        server.respond_with(lambda _api, _body: Reply.answer("words" * deltas, chunk=CHUNK))
        anthropic = AnthropicProvider(api_key=server.api_key, base_url=server.url)
        openai = OpenAIProvider(api_key=server.api_key, base_url=server.openai_url)
        try:
            results["anthropic"] = await measure(server, anthropic, "anthropic", calls, rounds)
            results["openai"] = await measure(server, openai, "openai", calls, rounds)
        finally:
            await anthropic.aclose()
            await openai.aclose()
            anthropic.close()
            openai.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deltas", type=int, default=400, help="text deltas per answer")
    parser.add_argument("--calls", type=int, default=40, help="timed calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="floor/call pairs, median taken")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    results = asyncio.run(run(args.deltas, args.calls, args.rounds))
    print("| API | events per answer | floor (httpx2 + json.loads) | complete_async | / floor |")
    print("|---|---|---|---|---|")
    for api, r in results.items():
        print(
            f"| {api} | {r['events']:.0f} | {r['floor_ms']:.2f} ms | {r['call_ms']:.2f} ms"
            f" | {r['ratio']:.2f}x |"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
