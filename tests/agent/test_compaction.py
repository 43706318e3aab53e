"""Compaction: when to compact, where to cut, what the model sees, and the durable write."""

from __future__ import annotations

import random
from pathlib import Path

from harness.agent.compaction import (
    SUMMARY_PROMPT,
    CompactionPlan,
    apply_compaction,
    needs_compaction,
    plan_compaction,
    render_for_summary,
)
from harness.agent.session import SUMMARY_HEADER, CompactionLine, SessionLine, SessionStore
from harness.agent.transcript import estimate_tokens
from harness.llm.types import Message, ToolCall, ToolResult


def _turn(tag: str, chars: int, *, calls: int = 1) -> list[Message]:
    """A user turn of about `chars` characters: a question, tool calls, results, an answer."""
    share = max(1, chars // (calls + 2))
    out = [Message.user(f"{tag} " + "q" * share)]
    for k in range(calls):
        call = ToolCall(id=f"{tag}-{k}", name="read", arguments={"path": f"{tag}.txt"})
        out.append(Message.assistant("", (call,)))
        out.append(Message.tool(ToolResult(tool_call_id=call.id, content="r" * share)))
    out.append(Message.assistant(f"{tag} done " + "a" * share))
    return out


def _random_transcript(rng: random.Random) -> list[Message]:
    """Turns of random sizes; some assistant messages call several tools, some end dangling."""
    out: list[Message] = []
    for t in range(rng.randint(0, 30)):
        if rng.random() < 0.9:
            out.append(Message.user(f"u{t} " + "q" * rng.randint(1, 30_000)))
        for s in range(rng.randint(0, 5)):
            calls = tuple(
                ToolCall(id=f"{t}.{s}.{k}", name="bash", arguments={"n": "x" * rng.randint(0, 99)})
                for k in range(rng.randint(0, 3))
            )
            out.append(Message.assistant("thinking " * rng.randint(0 if calls else 1, 500), calls))
            if calls and rng.random() < 0.95:
                results = (
                    ToolResult(tool_call_id=c.id, content="o" * rng.randint(0, 40_000))
                    for c in calls
                )
                out.append(Message.tool(*results))
    return out


def _store_with(tmp_path: Path, messages: list[Message]) -> SessionStore:
    store = SessionStore(tmp_path)
    store.append(
        "k", [SessionLine(message=m, meta={"idem": f"m{i}"}) for i, m in enumerate(messages)]
    )
    return store


def test_needs_compaction_triggers_only_above_eighty_percent() -> None:
    # Given a conversation of exactly 120,000 estimated tokens (80% of 150,000)
    at_limit = [Message.user("x" * 480_000)]
    assert estimate_tokens(at_limit) == 120_000
    # Then it does not trigger, and one more token, from the system prompt, does
    assert needs_compaction(at_limit) is False
    assert needs_compaction(at_limit, system_chars=1) is True
    assert needs_compaction(at_limit, context_tokens=100_000, threshold=0.5) is True


def test_plan_compaction_keeps_about_twenty_thousand_recent_tokens() -> None:
    # Given 60 turns of about 1,000 tokens each
    messages = [m for t in range(60) for m in _turn(f"t{t}", 4_000)]
    # When planned
    plan = plan_compaction(messages)
    # Then the recent part is whole turns, at most 20,000 tokens and within one turn of it
    recent_tokens = estimate_tokens(plan.recent)
    assert 19_000 < recent_tokens <= 20_000, f"recent part is {recent_tokens} tokens"
    assert plan.recent[0].role == "user"
    assert plan.old + plan.recent == messages


def test_plan_compaction_with_nothing_old_has_an_empty_old_part() -> None:
    messages = _turn("a", 400) + _turn("b", 400)
    plan = plan_compaction(messages)
    assert plan == CompactionPlan(old=[], recent=messages)
    assert plan_compaction([]) == CompactionPlan(old=[], recent=[])


def test_plan_compaction_cuts_inside_a_turn_too_big_to_keep_whole() -> None:
    # Given a last turn of about 40,000 tokens spread over many tool calls
    messages = _turn("a", 4_000) + _turn("b", 160_000, calls=10)
    # When planned
    plan = plan_compaction(messages)
    # Then the cut falls on an assistant message inside that turn
    assert plan.recent[0].role == "assistant"
    assert 0 < estimate_tokens(plan.recent) <= 20_000


def test_plan_compaction_keeps_a_single_oversized_tool_exchange_whole() -> None:
    call = ToolCall(id="big", name="read")
    messages = [
        Message.user("go"),
        Message.assistant("", (call,)),
        Message.tool(ToolResult(tool_call_id="big", content="z" * 200_000)),
    ]
    plan = plan_compaction(messages)
    assert plan.recent == messages[1:], "the call was separated from its oversized result"


def test_plan_compaction_never_separates_a_call_from_its_result_in_random_transcripts() -> None:
    for seed in range(400):
        rng = random.Random(seed)
        messages = _random_transcript(rng)
        keep = rng.choice([500, 5_000, 20_000])
        plan = plan_compaction(messages, keep_recent_tokens=keep)
        assert plan.old + plan.recent == messages, f"seed {seed}: messages lost or reordered"
        if not messages:
            continue
        assert plan.recent, f"seed {seed}: empty recent part"
        assert plan.recent[0].role != "tool", f"seed {seed}: recent starts with tool results"
        if not plan.old:
            continue
        if estimate_tokens(plan.recent) > keep:
            # only when no cut fits: then the recent part is one message and its results
            assert all(m.role == "tool" for m in plan.recent[1:]), f"seed {seed}: too big"
        elif plan.recent[0].role == "user":
            longer = [i for i, m in enumerate(plan.old[1:], 1) if m.role == "user"]
            assert all(estimate_tokens(messages[i:]) > keep for i in longer), (
                f"seed {seed}: a longer recent part starting at a user message would fit"
            )


def test_summary_prompt_asks_for_the_checkpoint_sections() -> None:
    for section in [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "Done",
        "In Progress",
        "Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
        "exact file paths, function names",
        "error messages",
    ]:
        assert section in SUMMARY_PROMPT, f"SUMMARY_PROMPT lacks {section!r}"


def test_render_for_summary_names_tools_and_truncates_results() -> None:
    # Given an exchange with a long error result
    call = ToolCall(id="c1", name="bash", arguments={"command": "pytest -q"})
    old = [
        Message.user("run the tests"),
        Message.assistant("running", (call,)),
        Message.tool(
            ToolResult(tool_call_id="c1", content="H" * 3_000 + "T" * 3_000, is_error=True)
        ),
    ]
    # When rendered
    text = render_for_summary(old)
    # Then roles, the call and the result's head and tail are readable, and the middle is cut
    assert "[user]\nrun the tests" in text
    assert '[tool call: bash] {"command": "pytest -q"}' in text
    assert "[tool result: bash, error]" in text
    assert "[... 4000 chars omitted ...]" in text
    assert text.count("H") == 1000 and text.count("T") == 1000
    assert len(text) < 2_300


def test_apply_compaction_archives_and_leaves_the_summary_first(tmp_path: Path) -> None:
    # Given a stored session and a plan made from it
    messages = [m for t in range(30) for m in _turn(f"t{t}", 4_000)]
    store = _store_with(tmp_path, messages)
    before = store.path_for("k").read_bytes()
    plan = plan_compaction(store.messages("k"), keep_recent_tokens=5_000)
    # When the summary is applied
    written = apply_compaction(store, "k", "## Goal\nship it", plan, run_id="run-7")
    # Then the model sees the summary, then the recent messages, and the old file is archived
    assert written is True
    assert store.messages("k") == [Message.user(SUMMARY_HEADER + "## Goal\nship it"), *plan.recent]
    archives = list((tmp_path / "sessions" / "archive").iterdir())
    assert [a.read_bytes() for a in archives] == [before]
    lines = store.load("k")
    assert isinstance(lines[0], CompactionLine) and lines[0].run_id == "run-7"
    first_kept = len(plan.old)
    assert lines[1].meta == {"idem": f"m{first_kept}"}, "the kept lines lost their metadata"


def test_apply_compaction_is_idempotent(tmp_path: Path) -> None:
    # Given a compaction already applied
    store = _store_with(tmp_path, [m for t in range(10) for m in _turn(f"t{t}", 4_000)])
    plan = plan_compaction(store.messages("k"), keep_recent_tokens=2_000)
    assert apply_compaction(store, "k", "summary", plan, run_id="r")
    after = store.path_for("k").read_bytes()
    # When the durable step replays it
    again = apply_compaction(store, "k", "summary", plan, run_id="r")
    # Then nothing changes and nothing more is archived
    assert again is False
    assert store.path_for("k").read_bytes() == after
    assert len(list((tmp_path / "sessions" / "archive").iterdir())) == 1


def test_apply_compaction_keeps_lines_appended_after_the_plan(tmp_path: Path) -> None:
    store = _store_with(tmp_path, [m for t in range(10) for m in _turn(f"t{t}", 4_000)])
    plan = plan_compaction(store.messages("k"), keep_recent_tokens=2_000)
    store.append("k", [SessionLine(message=Message.user("arrived meanwhile"))])
    assert apply_compaction(store, "k", "summary", plan, run_id="r")
    assert store.messages("k")[-1] == Message.user("arrived meanwhile")


def test_apply_compaction_refuses_a_plan_not_made_from_the_file(tmp_path: Path) -> None:
    store = _store_with(tmp_path, [m for t in range(10) for m in _turn(f"t{t}", 4_000)])
    before = store.path_for("k").read_bytes()
    foreign = plan_compaction(
        [m for t in range(10) for m in _turn(f"x{t}", 4_000)], keep_recent_tokens=2_000
    )
    assert apply_compaction(store, "k", "summary", foreign, run_id="r") is False
    assert store.path_for("k").read_bytes() == before


def test_apply_compaction_twice_folds_the_first_summary_in(tmp_path: Path) -> None:
    # Given a session compacted once, then grown
    store = _store_with(tmp_path, [m for t in range(10) for m in _turn(f"t{t}", 4_000)])
    first = plan_compaction(store.messages("k"), keep_recent_tokens=2_000)
    apply_compaction(store, "k", "first summary", first, run_id="r1")
    store.append("k", [SessionLine(message=m) for t in range(5) for m in _turn(f"n{t}", 4_000)])
    # When compacted again
    second = plan_compaction(store.messages("k"), keep_recent_tokens=2_000)
    assert second.old[0] == Message.user(SUMMARY_HEADER + "first summary")
    assert apply_compaction(store, "k", "second summary", second, run_id="r2")
    # Then one checkpoint remains, and keys of every compacted message are still refused
    lines = store.load("k")
    assert [type(line) for line in lines].count(CompactionLine) == 1
    assert store.messages("k")[0] == Message.user(SUMMARY_HEADER + "second summary")
    line = SessionLine(message=Message.user("replayed"))
    assert store.append_once("k", line, key="m0") is False, "a compacted message was re-added"
