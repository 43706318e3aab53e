"""The chat client (`harness.chat_client`) and the terminal chat (`harness chat`) on it.

The runtime here answers synchronously: its kicker drains every kicked run before `publish`
returns, so by the time a client waits, the progress is queued on its subscription and the
reply is on the events stream. No threads, no sleeps.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import fakeredis
import pytest
import redis
import typer
from rich.console import Console
from typer.testing import CliRunner

from channels.approvals import answer_approval, ask_approval
from harness.agent.chat_commands.handler import chat_command
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.agent.progress import Progress, report_step
from harness.chat_client import (
    ChatFailedError,
    ChatReply,
    ChatSession,
    ChatTimeoutError,
    Waiting,
)
from harness.cli import app as harness_app
from harness.commands.chat import chat, run_chat
from harness.errors import NonRetriableError
from harness.events import MESSAGE_RECEIVED, REPLY_READY, Event
from harness.runtime import Context, Runtime, event, function, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import DrainingKicker
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer, Reply


@pytest.fixture(params=["fakeredis", "redis"])
def live_runtime(request: pytest.FixtureRequest, registry: FunctionRegistry) -> Runtime:
    """A runtime that answers at publish, on fakeredis and on a real Redis (pub/sub and
    blocking stream reads behave for real there)."""
    if request.param == "redis":
        client: redis.Redis = request.getfixturevalue("redis_client")
    else:
        client = fakeredis.FakeRedis(decode_responses=True)
        request.addfinalizer(client.flushall)
    kicker = DrainingKicker()
    runtime = Runtime(redis=client, kicker=kicker, registry=registry)
    kicker.runtime = runtime
    return runtime


def _reply(ctx: Context, step: str, text: str, chat_id: str, channel: str = "cli") -> None:
    data = {
        "response": text,
        "channel": channel,
        "destination": {"chat_id": chat_id},
        "run_id": ctx.run_id,
    }
    ctx.step.send_event(step, Event(name=REPLY_READY, data=data))


@pytest.fixture
def echo(live_runtime: Runtime, registry: FunctionRegistry) -> None:
    """An agent stand-in: reports one tool, replies to two other chats, then echoes."""

    @function(id="echo", trigger=event(MESSAGE_RECEIVED), registry=registry)
    def echo_fn(ctx: Context) -> None:
        session = str(ctx.event.data["session_key"])
        ctx.step.run("work", lambda: report_step(ctx, session, "running", "echo"))
        _reply(ctx, "other-session", "not yours", chat_id="someone-else")
        _reply(ctx, "other-channel", "not yours either", chat_id=session, channel="telegram")
        _reply(ctx, "reply", f"echo: {ctx.event.data['message']} ({session})", chat_id=session)

    live_runtime.register_functions()


# -- the client ----------------------------------------------------------------------------
@pytest.mark.usefixtures("echo")
def test_chat_client_returns_the_reply_for_its_own_session(live_runtime: Runtime) -> None:
    # Given an agent that also answers other chats while handling the message
    chat = ChatSession(live_runtime, "s1")
    # When the client asks
    reply = chat.ask("hi")
    # Then it gets the reply for its session and channel only
    assert reply.response == "echo: hi (s1)", f"expected the echo for s1, got {reply}"


@pytest.mark.usefixtures("echo")
def test_chat_client_yields_progress_then_the_reply(live_runtime: Runtime) -> None:
    chat = ChatSession(live_runtime, "s1")
    with chat.send("hi") as exchange:
        updates = list(exchange.updates())
    assert len(updates) == 2, updates
    progress, reply = updates
    assert isinstance(progress, Progress) and progress.label == "running echo"
    assert isinstance(reply, ChatReply) and reply.response == "echo: hi (s1)"
    assert reply.run_id == progress.run_id


@pytest.mark.usefixtures("echo")
def test_chat_client_ignores_replies_published_before_its_message(
    live_runtime: Runtime,
) -> None:
    # Given an earlier exchange in the session whose reply is already on the stream
    chat = ChatSession(live_runtime, "s1")
    chat.ask("first")
    # When a second message is sent
    reply = chat.ask("second")
    # Then the old reply is not mistaken for the new one
    assert reply.response == "echo: second (s1)"


def test_chat_client_times_out_with_a_clear_error(live_runtime: Runtime) -> None:
    # Given nothing that answers messages
    chat = ChatSession(live_runtime, "s1", timeout=0.05, poll_interval=0.01)
    # When the client asks, Then it gives up saying how long it waited
    with pytest.raises(ChatTimeoutError, match=r"no reply within 0\.05s"):
        chat.ask("anyone?")


def test_chat_client_sends_keepalives_while_nothing_happens(live_runtime: Runtime) -> None:
    chat = ChatSession(live_runtime, "s1", timeout=0.05, poll_interval=0.01)
    updates: list[object] = []
    with chat.send("anyone?") as exchange, pytest.raises(ChatTimeoutError):
        updates.extend(exchange.updates(heartbeat=0))
    assert updates and all(isinstance(u, Waiting) for u in updates), updates


def test_chat_client_reports_a_failed_run_at_once(
    live_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given an agent whose run fails for good
    @function(id="broken", trigger=event(MESSAGE_RECEIVED), registry=registry)
    def broken(ctx: Context) -> None:
        raise NonRetriableError("no model")

    live_runtime.register_functions()
    chat = ChatSession(live_runtime, "s1")
    # When the client asks, Then it learns the run failed instead of waiting for the timeout
    with pytest.raises(ChatFailedError, match="failed; no reply will come") as failure:
        chat.ask("hello")
    assert failure.value.run_id.startswith("r")


def test_a_new_session_gets_a_fresh_key(live_runtime: Runtime) -> None:
    chat = ChatSession(live_runtime)
    first = chat.session_key
    second = chat.new_session()
    assert first != second and chat.session_key == second
    assert re.fullmatch(r"cli-[0-9a-f]{12}", second), second


# -- the terminal chat ----------------------------------------------------------------------
@pytest.fixture
def agent_fleet(
    live_runtime: Runtime, registry: FunctionRegistry, model_server: ModelServer, tmp_path: Path
) -> Iterator[Runtime]:
    """The real agent on the answering runtime, as the process's runtime (as `harness chat`
    finds it), talking to the scripted model."""
    registry.register(handle_message)
    live_runtime.register_functions()
    set_agent_deps(build_deps(make_settings(tmp_path / "workspace", model_server)))
    set_runtime(live_runtime)
    yield live_runtime
    set_runtime(None)
    set_agent_deps(None)


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(chat)
    return app


def test_harness_chat_shows_progress_and_the_reply_then_starts_a_new_session(
    agent_fleet: Runtime, model_server: ModelServer
) -> None:
    # Given a model that lists the workspace, then answers in Markdown, twice
    model_server.script(
        Reply.tool("ls", {"path": "."}),
        Reply.answer("You have **SOUL.md**."),
        Reply.answer("Fresh start."),
    )
    # When a user pipes a message, /new, a second message and /exit into `harness chat`
    result = CliRunner().invoke(_cli(), [], input="hello\n/new\nhi again\n/exit\n")
    # Then the status lines and the replies, streamed as written, are printed in two sessions
    assert result.exit_code == 0, result.output
    out = result.output
    assert "thinking…" in out and "listing the workspace…" in out, out
    assert out.index("listing the workspace…") < out.index("You have **SOUL.md**."), out
    assert out.count("You have") == 1, "a streamed reply must not be printed twice"
    assert out.index("You have") < out.index("New session") < out.index("Fresh start.")
    first = re.search(r"Chatting in session (cli-[0-9a-f]{12})", out)
    second = re.search(r"New session (cli-[0-9a-f]{12})", out)
    assert first and second and first.group(1) != second.group(1), out
    assert len(model_server.requests[2].body["messages"]) == 1, (
        "after /new the model must see a fresh conversation"
    )


def test_harness_chat_status_is_answered_by_the_fleets_chat_command(
    agent_fleet: Runtime, registry: FunctionRegistry, model_server: ModelServer
) -> None:
    # Given the fleet answers chat commands too (its workers load `agent-chat-command`)
    registry.register(chat_command)
    agent_fleet.register_functions()
    model_server.script(Reply.answer("Hello."))
    # When a user says hello, then types /status and /help
    result = CliRunner().invoke(_cli(), [], input="hello\n/status\n/help\n/exit\n")
    # Then /status is answered by the fleet without a model call, /help lists the commands
    assert result.exit_code == 0, result.output
    assert "Conversation: 2 messages" in result.output, result.output
    assert "/reset" in result.output and "/usage" in result.output, result.output
    assert len(model_server.requests) == 1


@pytest.mark.parametrize(("typed", "written"), [("y", True), ("n", False)], ids=["yes", "no"])
def test_harness_chat_asks_in_the_terminal_before_a_risky_call(
    agent_fleet: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    tmp_path: Path,
    typed: str,
    written: bool,
) -> None:
    # Given the approval functions, and a model that wants to write in functions/
    registry.register(ask_approval)
    registry.register(answer_approval)
    agent_fleet.register_functions()
    model_server.script(
        Reply.tool("write", {"path": "functions/job.py", "content": "x = 1\n"}),
        Reply.answer("Done deciding."),
    )
    # When the user asks, then answers the terminal's question
    result = CliRunner().invoke(_cli(), [], input=f"make the job\n{typed}\n/exit\n")
    # Then the request was shown, and the answer decided whether the file was written
    assert result.exit_code == 0, result.output
    assert "The agent wants to run write" in result.output and "functions/job.py" in result.output
    assert (tmp_path / "workspace" / "functions" / "job.py").exists() is written, result.output
    assert "Done deciding." in result.output


def test_harness_chat_resumes_a_session_given_on_the_command_line(
    agent_fleet: Runtime, model_server: ModelServer
) -> None:
    model_server.script(Reply.answer("Hello."))
    result = CliRunner().invoke(_cli(), ["--session", "my-notes"], input="hello\n")
    assert result.exit_code == 0, result.output
    assert "Chatting in session my-notes" in result.output
    assert "Hello." in result.output


def test_chat_loop_reports_a_timeout_and_goes_on_until_end_of_input(
    live_runtime: Runtime,
) -> None:
    # Given no agent, and a user who sends two messages then closes the input (Ctrl-D)
    out = io.StringIO()
    chat = ChatSession(live_runtime, "s1", timeout=0.01, poll_interval=0.01)
    # When the chat runs
    code = run_chat(chat, Console(file=out, width=100), stdin=io.StringIO("one\ntwo\n"))
    # Then each wait ends with the timeout message and the chat ends cleanly
    assert code == 0
    assert out.getvalue().count("no reply within 0.01s") == 2, out.getvalue()


def test_harness_chat_refuses_an_invalid_session_key(agent_fleet: Runtime) -> None:
    # When `harness chat` is given a session key too long for an event
    result = CliRunner().invoke(harness_app, ["chat", "--session", "x" * 301], input="hello\n")
    # Then it is a usage error: one line on stderr, nothing on stdout, exit 2
    assert result.exit_code == 2, result.output
    assert "at most 300 characters" in " ".join(result.stderr.split()), result.output
    assert result.stdout == "", result.stdout


# -- a model provider that refuses the call -------------------------------------------------
REFUSALS = [
    (Reply.error(401), "the model provider refused the API key (401 authentication_error): "
     "check ANTHROPIC_API_KEY"),
    (Reply.error(402, "Your credit balance is too low", error_type="billing_error"),
     "the model provider says the account's quota or credit is used up (402 billing_error)"),
    (Reply.error(404), "the model provider does not know the model (404 not_found_error): "
     "check AGENT_MODEL"),
]  # fmt: skip
REFUSAL_IDS = ["key", "quota", "model"]


@pytest.mark.parametrize(("refusal", "reason"), REFUSALS, ids=REFUSAL_IDS)
def test_harness_chat_says_why_the_model_refused(
    agent_fleet: Runtime, model_server: ModelServer, refusal: Reply, reason: str
) -> None:
    # Given a model provider that refuses the call
    model_server.script(refusal)
    # When a user writes in `harness chat`
    result = CliRunner().invoke(_cli(), [], input="hello\n/exit\n")
    # Then the chat says the run failed and what to fix, without the key
    out = " ".join(result.output.split())
    assert "failed; no reply will come" in out and reason in out, out
    assert model_server.api_key not in result.output


@pytest.mark.parametrize(("refusal", "reason"), REFUSALS, ids=REFUSAL_IDS)
def test_send_wait_says_why_the_model_refused(
    agent_fleet: Runtime, model_server: ModelServer, refusal: Reply, reason: str
) -> None:
    # Given a model provider that refuses the call
    model_server.script(refusal)
    # When a message is sent with `harness send --wait`
    result = CliRunner().invoke(harness_app, ["send", "--wait", "hello"])
    # Then it fails with one line saying what to fix, without the key
    assert result.exit_code != 0, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert reason in line, result.output
    assert model_server.api_key not in result.output
