"""The conversations pages: the chats the agent answered, and a chat's transcript with its
tool calls folded, its approvals and their answers, secrets masked, live."""

from __future__ import annotations

from pathlib import Path

from harness.agent.session import SessionLine, SessionStore
from harness.llm.types import Message, ToolCall, ToolResult
from harness.records.stores import redis_records
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.web.dashboard_client import AUTH, dashboard_client, live_lines, one, soup

SESSION = "telegram:42"
TOKEN = "xoxb-123456789012-TRANSCRIPTsecret"
TARGET = {"channel": "telegram", "destination": {"chat_id": "42"}, "session_key": SESSION}


def _turns(runtime: Runtime, registry: FunctionRegistry) -> None:
    """Two chats answered, the second one later; an approval asked in the first."""

    @function(id="agent-handle-message", trigger=event("agent.message.received"), registry=registry)
    def turn(ctx: Context) -> dict[str, object]:
        return {"reply": "ok"}

    @function(id="ask-approval", trigger=event("agent.approval.requested"), registry=registry)
    def ask(ctx: Context) -> None:
        return None

    runtime.register_functions()
    for key, chat, name in ((SESSION, "42", "Ada"), ("slack:C1", "C1", "Grace")):
        data = {"session_key": key, "message": f"hello from {name}", "channel": key.split(":")[0],
                "sender": {"id": "7", "name": name}, "destination": {"chat_id": chat}}  # fmt: skip
        publish({"name": "agent.message.received", "data": data}, runtime=runtime)
        runtime.clock.advance(1)  # type: ignore[attr-defined]
    approvals = redis_records(runtime).approvals
    approvals.open("a1", [], SESSION)
    approvals.decide("a1", "approve", "telegram:user:7", "Ada")
    request = {"approval_id": "a1", "run_id": "r-turn", "tool": "bash",
               "summary": "rm -rf build/", "reply": TARGET}  # fmt: skip
    publish({"name": "agent.approval.requested", "data": request}, runtime=runtime)
    drain(runtime)


def _transcript(state: Path) -> None:
    """A turn that called a tool, got its result and answered, with a token in the result."""
    call = ToolCall(id="call-1", name="read", arguments={"path": "notes/todo.md"})
    lines = [
        SessionLine(message=Message.user("what is on my list?"), run_id="r-turn"),
        SessionLine(message=Message.assistant("Let me look.", (call,)), run_id="r-turn"),
        SessionLine(
            message=Message.tool(ToolResult(tool_call_id="call-1", content=f"milk\n{TOKEN}")),
            run_id="r-turn",
        ),
        SessionLine(message=Message.assistant("Milk, and a token."), run_id="r-turn"),
    ]
    SessionStore(state).append(SESSION, lines)


def test_conversations_list_each_chat_once_newest_first(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two chats the agent answered
    _turns(runtime, registry)
    # When the conversations page is opened
    page = soup(dashboard_client(runtime), "/dashboard/conversations")
    # Then each chat is a row, the latest first, with its channel, chat and person
    rows = page.select("#chats tr[data-chat]")
    assert [row["data-chat"] for row in rows] == ["slack:C1", SESSION], rows
    cells = [cell.get_text(strip=True) for cell in rows[1].select("td")]
    assert cells[:3] == ["42", "telegram", "Ada"], cells
    assert one(rows[1], "a")["href"] == "/dashboard/conversations/telegram%3A42"


def test_transcript_shows_messages_tool_calls_and_approvals_with_secrets_masked(
    runtime: Runtime, registry: FunctionRegistry, tmp_path: Path
) -> None:
    # Given a chat whose turn called a tool and asked an approval that Ada gave
    _turns(runtime, registry)
    _transcript(tmp_path)
    client = dashboard_client(runtime, state=tmp_path)
    # When its transcript is opened
    response = client.get(f"/dashboard/conversations/{SESSION}", headers=AUTH)
    page = soup(client, f"/dashboard/conversations/{SESSION}")
    # Then the person's message and the agent's replies show in order
    turns = [one(t, ".text").get_text() for t in page.select("#transcript [data-kind]")]
    assert turns == ["what is on my list?", "Let me look.", "Milk, and a token."], turns
    # And the tool call is folded with its arguments and result, the token masked
    (call,) = page.select('details.tool-call[data-tool="read"]')
    assert call.get("open") is None, "a tool call starts folded"
    assert "notes/todo.md" in one(call, "pre.arguments").get_text()
    assert "milk" in one(call, "pre.result").get_text()
    assert "[REDACTED]" in one(call, "pre.result").get_text()
    assert TOKEN not in response.text
    # And the approval shows what was asked and who answered
    (approval,) = page.select("[data-approval]")
    assert approval["data-approval"] == "approve" and "rm -rf build/" in approval.get_text()
    assert "by Ada" in approval.get_text(), approval.get_text()


def test_transcript_stream_sends_the_transcript_as_it_grows(
    runtime: Runtime, registry: FunctionRegistry, tmp_path: Path
) -> None:
    # Given a chat with a stored transcript
    _turns(runtime, registry)
    _transcript(tmp_path)
    # When its live stream is read
    path = f"/dashboard/conversations/{SESSION}/live"
    first = live_lines(runtime, path, lambda line: line.startswith("data: "), state=tmp_path)[-1]
    # Then its first event carries the transcript so far
    assert "Milk, and a token." in first and TOKEN not in first, first


def test_transcript_includes_a_named_agents_conversation_in_the_chat(
    runtime: Runtime, registry: FunctionRegistry, tmp_path: Path
) -> None:
    # Given a chat bound to named agent "helper", whose conversation is kept apart
    _turns(runtime, registry)
    line = SessionLine(message=Message.assistant("helper here"), run_id="r-helper")
    SessionStore(tmp_path).for_agent("helper").append(SESSION, [line])
    # When the chat's transcript is opened
    page = soup(dashboard_client(runtime, state=tmp_path), f"/dashboard/conversations/{SESSION}")
    # Then the named agent's reply shows, said to be the helper's
    (turn,) = page.select("#transcript [data-kind]")
    assert "helper here" in turn.get_text() and "helper ·" in one(turn, ".who").get_text()
