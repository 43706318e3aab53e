"""Keeping transcripts valid for providers: repair, token estimates, turn boundaries."""

from __future__ import annotations

import random

from harness.agent.transcript import (
    CANCELLED_RESULT,
    estimate_tokens,
    repair,
    turn_boundaries,
)
from harness.llm.types import Message, ToolCall, ToolResult


def _call(id_: str, name: str = "read") -> ToolCall:
    return ToolCall(id=id_, name=name, arguments={"path": "a.txt"})


def _result(id_: str, content: str = "ok") -> ToolResult:
    return ToolResult(tool_call_id=id_, content=content)


def _problems(messages: list[Message]) -> list[str]:
    """Every breach of "each tool call is answered exactly once, in the next message"."""
    problems: list[str] = []
    for i, message in enumerate(messages):
        if message.role == "tool":
            before = messages[i - 1] if i else None
            if before is None or before.role != "assistant" or not before.tool_calls:
                problems.append(f"tool message {i} answers no assistant tool calls")
        if message.role == "assistant" and message.tool_calls:
            after = messages[i + 1] if i + 1 < len(messages) else None
            calls = [c.id for c in message.tool_calls]
            if after is None or after.role != "tool":
                problems.append(f"assistant message {i} has no tool message after it")
            elif sorted(r.tool_call_id for r in after.tool_results) != sorted(calls):
                problems.append(f"tool message {i + 1} does not answer exactly {calls}")
    return problems


def _random_messages(rng: random.Random) -> list[Message]:
    """Any sequence of messages, including dangling calls, orphan and duplicate results."""
    out: list[Message] = []
    ids: list[str] = ["ghost"]
    for n in range(rng.randint(0, 25)):
        kind = rng.choice(["user", "text", "calls", "tool", "tool"])
        if kind == "user":
            out.append(Message.user(f"u{n}"))
        elif kind == "text":
            out.append(Message.assistant(f"a{n}"))
        elif kind == "calls":
            calls = tuple(_call(f"c{n}.{k}") for k in range(rng.randint(1, 3)))
            ids += [c.id for c in calls]
            out.append(Message.assistant(rng.choice(["", "working"]), calls))
        else:
            picked = [rng.choice(ids) for _ in range(rng.randint(1, 3))]
            out.append(Message.tool(*(_result(i) for i in picked)))
    return out


def test_repair_adds_a_cancelled_result_for_a_dangling_call() -> None:
    # Given a run cancelled while its second tool was running
    messages = [
        Message.user("go"),
        Message.assistant("", (_call("a"), _call("b"))),
        Message.tool(_result("a", "first")),
        Message.user("are you there?"),
    ]
    # When it is repaired
    repaired = repair(messages)
    # Then the missing result is a synthetic error, right after the call, in call order
    assert repaired[2] == Message.tool(
        _result("a", "first"),
        ToolResult(tool_call_id="b", content=CANCELLED_RESULT, is_error=True),
    )
    assert repaired[3] == Message.user("are you there?")


def test_repair_adds_a_tool_message_when_the_transcript_ends_on_calls() -> None:
    repaired = repair([Message.user("go"), Message.assistant("", (_call("a"),))])
    assert repaired[-1] == Message.tool(
        ToolResult(tool_call_id="a", content=CANCELLED_RESULT, is_error=True)
    )


def test_repair_drops_orphan_results() -> None:
    # Given results for calls that were never made, in and out of a tool message
    messages = [
        Message.user("go"),
        Message.tool(_result("nobody")),
        Message.assistant("", (_call("a"),)),
        Message.tool(_result("a"), _result("stranger"), _result("a", "second answer")),
        Message.assistant("done"),
        Message.tool(_result("late")),
    ]
    # When repaired
    repaired = repair(messages)
    # Then only the first answer to the real call remains
    assert repaired == [
        Message.user("go"),
        Message.assistant("", (_call("a"),)),
        Message.tool(_result("a")),
        Message.assistant("done"),
    ]


def test_repair_merges_results_split_over_two_tool_messages() -> None:
    messages = [
        Message.assistant("", (_call("a"), _call("b"))),
        Message.tool(_result("b")),
        Message.tool(_result("a")),
    ]
    assert repair(messages)[1:] == [Message.tool(_result("a"), _result("b"))]


def test_repair_leaves_a_valid_transcript_unchanged() -> None:
    messages = [
        Message.user("go"),
        Message.user("and quickly"),
        Message.assistant("", (_call("a"),)),
        Message.tool(_result("a")),
        Message.assistant("done"),
    ]
    repaired = repair(messages)
    assert repaired == messages
    assert all(x is y for x, y in zip(repaired, messages, strict=True))


def test_repair_answers_every_call_in_the_next_message_for_random_transcripts() -> None:
    for seed in range(500):
        rng = random.Random(seed)
        messages = _random_messages(rng)
        repaired = repair(messages)
        assert _problems(repaired) == [], f"seed {seed}: {_problems(repaired)}"
        assert repair(repaired) == repaired, f"seed {seed}: repair is not idempotent"
        kept = [m for m in messages if m.role != "tool"]
        assert [m for m in repaired if m.role != "tool"] == kept, f"seed {seed}: lost a message"


def test_estimate_tokens_counts_text_arguments_and_results_over_four() -> None:
    messages = [
        Message.user("x" * 40),
        Message.assistant("", (ToolCall(id="a", name="ab", arguments={"k": "v"}),)),
        Message.tool(ToolResult(tool_call_id="a", content="y" * 8)),
    ]
    # 40 text + 2 name + 10 for '{"k": "v"}' + 8 result + 20 system = 80 chars
    assert estimate_tokens(messages, system_chars=20) == 20
    assert estimate_tokens(messages, system_chars=21) == 21, "a partial token rounds up"
    assert estimate_tokens([]) == 0


def test_turn_boundaries_are_the_user_messages() -> None:
    messages = [
        Message.assistant("leftover"),
        Message.user("one"),
        Message.assistant("", (_call("a"),)),
        Message.tool(_result("a")),
        Message.user("two"),
        Message.user("three"),
    ]
    assert turn_boundaries(messages) == [1, 4, 5]
