"""The loop's hooks, driven by a scripted think: no Celery, no Redis."""

from __future__ import annotations

from collections.abc import Sequence

from harness.agent.hooks import HookChain, Hooks
from harness.agent.loop import LoopOutcome, run_agent_loop
from harness.llm.errors import ContextOverflowError
from harness.llm.provider import TextSink
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolResult, ToolSpec

TOOLS = [ToolSpec(name="ls", description="list"), ToolSpec(name="bash", description="run")]


def _calls(*calls: ToolCall) -> AssistantTurn:
    return AssistantTurn(tool_calls=calls, stop_reason="tool_use", model="m")


def _answer(text: str = "done") -> AssistantTurn:
    return AssistantTurn(text=text, stop_reason="end", model="m")


class Log(Hooks):
    """Writes each decision point it sees into `seen`, under its `name`."""

    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    def before_model(self, messages: Sequence[Message]) -> None:
        self.seen.append(f"{self.name}:before_model:{len(messages)}")

    def after_model(self, turn: AssistantTurn) -> None:
        self.seen.append(f"{self.name}:after_model:{len(turn.tool_calls)}")

    def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
        self.seen.append(f"{self.name}:before_tool:{call.name}")
        return call

    def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        self.seen.append(f"{self.name}:after_tool:{result.content}")
        return result

    def on_finish(self, outcome: LoopOutcome) -> None:
        self.seen.append(f"{self.name}:finish:{outcome.text}")


class Refuse(Hooks):
    """Answers every call of `tool` with a refusal instead of running it."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
        if call.name != self.tool:
            return call
        return ToolResult(tool_call_id=call.id, content="refused", is_error=True)


def _run(turns: list[AssistantTurn], hooks: Hooks, ran: list[str]) -> LoopOutcome:
    def think(messages: Sequence[Message], tools: Sequence[ToolSpec], note: str) -> AssistantTurn:
        return turns.pop(0)

    def act(call: ToolCall) -> ToolResult:
        ran.append(f"{call.name}:{call.arguments.get('path', '')}")
        return ToolResult(tool_call_id=call.id, content=f"ran {call.name}")

    return run_agent_loop(
        [Message.user("go")], TOOLS, think=think, act=act,
        steer=lambda: [], record=lambda m: None, hooks=hooks,
    )  # fmt: skip


def test_hooks_see_each_model_and_tool_call_in_order_then_the_finish() -> None:
    # Given two hooks in a chain, and a model that calls `ls` once, then answers
    seen: list[str] = []
    turns = [_calls(ToolCall(id="c1", name="ls")), _answer("all done")]

    # When the loop runs
    _run(turns, HookChain(Log("a", seen), Log("b", seen)), ran=[])

    # Then each point reaches both hooks in chain order, around each call, then the finish
    assert seen == [
        "a:before_model:1", "b:before_model:1", "a:after_model:1", "b:after_model:1",
        "a:before_tool:ls", "b:before_tool:ls", "a:after_tool:ran ls", "b:after_tool:ran ls",
        "a:before_model:3", "b:before_model:3", "a:after_model:0", "b:after_model:0",
        "a:finish:all done", "b:finish:all done",
    ]  # fmt: skip


def test_before_tool_refusal_answers_the_call_without_running_it() -> None:
    # Given a hook that refuses `bash`, then a logging hook, and a model calling bash and ls
    seen: list[str] = []
    ran: list[str] = []
    calls = _calls(ToolCall(id="c1", name="bash"), ToolCall(id="c2", name="ls"))
    turns = [calls, _answer()]
    results: list[ToolResult] = []

    class Results(Hooks):
        def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
            results.append(result)
            return result

    # When the loop runs
    _run(turns, HookChain(Refuse("bash"), Log("later", seen), Results()), ran)

    # Then bash never ran and the model got the refusal as its result; ls ran as usual,
    # and the hook after the refusing one was not asked about bash
    assert ran == ["ls:"], "a refused call must not reach act"
    assert [(r.tool_call_id, r.content, r.is_error) for r in results] == [
        ("c1", "refused", True),
        ("c2", "ran ls", False),
    ]
    assert "later:before_tool:bash" not in seen and "later:before_tool:ls" in seen


def test_before_tool_rewrite_is_what_the_next_hook_sees_and_act_runs() -> None:
    # Given a hook that rewrites a call's path (as the approval hook resolves it)
    class Resolve(Hooks):
        def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
            return call.model_copy(update={"arguments": {"path": "functions/h.py"}})

    seen_paths: list[str] = []

    class Watch(Hooks):
        def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
            seen_paths.append(str(call.arguments["path"]))
            return call

    ran: list[str] = []
    turns = [_calls(ToolCall(id="c1", name="ls", arguments={"path": "fn/h.py"})), _answer()]

    # When the loop runs
    _run(turns, HookChain(Resolve(), Watch()), ran)

    # Then the next hook and the tool both got the rewritten call
    assert seen_paths == ["functions/h.py"]
    assert ran == ["ls:functions/h.py"]


def test_after_tool_results_pass_through_each_hook_in_turn() -> None:
    # Given two hooks that each append to the result
    class Append(Hooks):
        def __init__(self, suffix: str) -> None:
            self.suffix = suffix

        def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
            return result.model_copy(update={"content": result.content + self.suffix})

    sent: list[str] = []

    def think(messages: Sequence[Message], tools: Sequence[ToolSpec], note: str) -> AssistantTurn:
        sent.extend(r.content for m in messages for r in m.tool_results)
        return _calls(ToolCall(id="c1", name="ls")) if not sent else _answer()

    # When the loop runs a call
    run_agent_loop(
        [Message.user("go")], TOOLS, think=think,
        act=lambda call: ToolResult(tool_call_id=call.id, content="out"),
        steer=lambda: [], record=lambda m: None, hooks=HookChain(Append("+1"), Append("+2")),
    )  # fmt: skip

    # Then the model sees the result as the last hook left it
    assert sent == ["out+1+2"]


def test_before_model_is_called_again_when_an_overflow_is_retried() -> None:
    # Given a model whose first call overflows its context
    seen: list[str] = []
    tries: list[int] = []

    def think(messages: Sequence[Message], tools: Sequence[ToolSpec], note: str) -> AssistantTurn:
        tries.append(len(messages))
        if len(tries) == 1:
            raise ContextOverflowError("too long")
        return _answer()

    # When the loop compacts and tries again
    run_agent_loop(
        [Message.user("go")], TOOLS, think=think,
        act=lambda call: ToolResult(tool_call_id=call.id, content="ok"),
        steer=lambda: [], record=lambda m: None, hooks=Log("h", seen),
    )  # fmt: skip

    # Then each try was announced, and the answer seen once
    assert seen == ["h:before_model:1", "h:before_model:1", "h:after_model:0", "h:finish:done"]


def test_on_finish_sees_an_outcome_stopped_at_the_iteration_limit() -> None:
    # Given a model that never stops calling tools
    finished: list[LoopOutcome] = []

    class Finish(Hooks):
        def on_finish(self, outcome: LoopOutcome) -> None:
            finished.append(outcome)

    def think(messages: Sequence[Message], tools: Sequence[ToolSpec], note: str) -> AssistantTurn:
        return _calls(ToolCall(id=f"c{len(messages)}", name="ls"))

    # When the loop runs out of iterations
    outcome = run_agent_loop(
        [Message.user("go")], TOOLS, think=think,
        act=lambda call: ToolResult(tool_call_id=call.id, content="ok"),
        steer=lambda: [], record=lambda m: None, hooks=Finish(), max_iterations=3,
    )  # fmt: skip

    # Then the finish hook saw that outcome, once
    assert finished == [outcome] and outcome.hit_limit


def test_chain_feeds_streamed_text_to_every_hook_that_wants_it() -> None:
    # Given two hooks that want the streamed text and one that does not
    got: dict[str, list[str]] = {"a": [], "b": []}

    class Stream(Hooks):
        def __init__(self, name: str) -> None:
            self.name = name

        def model_started(self, think: int, attempt: int) -> TextSink | None:
            return got[self.name].append

    chain = HookChain(Stream("a"), Hooks(), Stream("b"))

    # When a model call starts and streams a piece
    sink = chain.model_started(1, 0)
    assert sink is not None
    sink("Hel")

    # Then both got it; and a chain where nobody wants the text streams nowhere
    assert got == {"a": ["Hel"], "b": ["Hel"]}
    assert HookChain(Hooks(), Hooks()).model_started(1, 0) is None
