"""Benchmark of prompt caching: the share of input tokens read from the cache over a long chat.

A 50-turn conversation (`--turns`) through the real providers against the scripted model
server, whose prompt cache reports reads and writes the way the real APIs do
(`tests.fakes.prompt_cache`): a 12,000-character stable system prompt, four tools, a
volatile time line that changes every turn, and on every other turn one tool call whose
result is 2,000 characters before the answer.

- **Anthropic, ours:** breakpoints after the stable system prompt and on the conversation
  (`mark_conversation`).
- **Anthropic, system only:** the same with `mark_conversation` switched off, as before.
- **OpenAI-compatible:** automatic prefix caching, no markers; the prefix must stay
  byte-stable.

Usage: python -m bench.prompt_cache [--turns 50]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import harness.llm.anthropic_wire as anthropic_wire
from harness.llm.anthropic import AnthropicProvider
from harness.llm.guard import forbid_real_model_calls
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import ModelProvider
from harness.llm.types import Message, SystemBlock, ToolResult, ToolSpec, Usage
from tests.fakes.model_server import ModelServer, Reply

STABLE = SystemBlock(text=("You are Harness, a careful personal assistant. " * 250)[:12_000])
TOOLS = [
    ToolSpec(
        name=name,
        description=f"The {name} tool: does what its name says, carefully and quickly.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    for name in ("read_file", "write_file", "web_fetch", "bash")
]


@dataclass
class Tally:
    """Summed usage of every call in one conversation."""

    calls: int = 0
    uncached: int = 0
    read: int = 0
    written: int = 0

    def add(self, usage: Usage) -> None:
        self.calls += 1
        self.uncached += usage.input_tokens
        self.read += usage.cache_read_tokens
        self.written += usage.cache_write_tokens

    @property
    def share(self) -> float:
        total = self.uncached + self.read + self.written
        return self.read / total if total else 0.0


def converse(provider: ModelProvider, server: ModelServer, turns: int) -> Tally:
    """Run the conversation and sum what the server reported."""
    tally = Tally()
    history: list[Message] = []
    for turn in range(turns):
        system = [STABLE, SystemBlock(text=f"Now: 2027-03-01 {turn:02d}:00", volatile=True)]
        history.append(Message.user(f"Question {turn}: " + "tell me more about it. " * 8))
        if turn % 2:
            server.script(Reply.tool("read_file", {"path": f"notes/{turn}.md"}))
            step = provider.complete(system=system, messages=history, tools=TOOLS)
            tally.add(step.usage)
            call = step.tool_calls[0]
            history.append(Message.assistant(tool_calls=step.tool_calls))
            content = f"file {turn}: " + "x" * 2_000
            history.append(Message.tool(ToolResult(tool_call_id=call.id, content=content)))
        server.script(Reply.answer(f"Answer {turn}. " + "Here is what I found. " * 18))
        answer = provider.complete(system=system, messages=history, tools=TOOLS)
        tally.add(answer.usage)
        history.append(Message.assistant(answer.text))
    return tally


def run(name: str, build: Callable[[ModelServer], ModelProvider], turns: int) -> Tally:
    with ModelServer(prompt_cache=True) as server:
        provider = build(server)
        try:
            return converse(provider, server, turns)
        finally:
            provider.close()


def main() -> None:
    """Print one table row per strategy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    forbid_real_model_calls()

    def anthropic(server: ModelServer) -> ModelProvider:
        return AnthropicProvider(api_key=server.api_key, base_url=server.url, timeout=30.0)

    def openai(server: ModelServer) -> ModelProvider:
        return OpenAIProvider(api_key=server.api_key, base_url=server.openai_url, timeout=30.0)

    rows = [("Anthropic, system + conversation breakpoints", run("a", anthropic, args.turns))]
    original = anthropic_wire.mark_conversation
    anthropic_wire.mark_conversation = lambda wire: wire  # the behaviour before issue 16
    try:
        rows.append(("Anthropic, system breakpoint only", run("b", anthropic, args.turns)))
    finally:
        anthropic_wire.mark_conversation = original
    rows.append(("OpenAI-compatible, automatic prefix", run("c", openai, args.turns)))
    print(f"{args.turns} turns")
    print("| strategy | calls | uncached | cache read | cache write | read share |")
    print("|---|---|---|---|---|---|")
    for label, t in rows:
        print(
            f"| {label} | {t.calls} | {t.uncached:,} | {t.read:,} | {t.written:,} | {t.share:.1%} |"
        )


if __name__ == "__main__":
    main()
