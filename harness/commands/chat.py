"""`harness chat`: an interactive terminal chat with the agent, through the whole fleet.

Each line goes onto the bus like any channel's message and a worker answers it; while it
works, a status line follows the run's progress ("thinking…", "running bash…") and the answer
appears as it is written (see `chat_display`). When a risky tool call waits for approval, the
terminal shows it and asks (y: approve, s: allow for this session, anything else: deny).
`/new` starts a fresh session (a new session key: the old session is kept, as a chat's `/new`
keeps it), `/exit` (or Ctrl-D, Ctrl-C) quits; the other chat commands (`/status`, `/usage`,
`/reset`, ...: `harness.events.commands`) go to the fleet like any channel's and are answered
there by the same code. `run_chat` holds the loop with its input and output injected, for
tests and embedding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from harness.agent.progress import Progress
from harness.chat_client import (
    DEFAULT_TIMEOUT_S,
    ApprovalAsked,
    ChatError,
    ChatReply,
    ChatSession,
    ChatTimeoutError,
    ChatUnavailableError,
)
from harness.commands.chat_display import ReplyDisplay
from harness.commands.exit_codes import OK, exit_code_for
from harness.errors import HarnessError
from harness.events.commands import help_text, parse_command

PROMPT = "[bold green]you>[/bold green] "
HELP = "/new starts a fresh session, /exit quits (or Ctrl-D), /help lists the chat commands."
EXIT_COMMANDS = frozenset({"/exit", "/quit"})


def chat(
    session: Annotated[
        str | None, typer.Option("--session", help="Resume this session key.")
    ] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for each reply.")
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Chat with the agent in the terminal (a worker must be running: see `harness up`).
    A bad session key or a bus that does not answer is one line on stderr before the prompt,
    with the exit code of `exit_codes` (2, 3), like every command."""
    from harness.runtime import get_runtime

    runtime = get_runtime()
    chat_session = ChatSession(runtime, session, timeout=timeout, can_answer=True)
    runtime.ping()
    raise typer.Exit(code=run_chat(chat_session, Console(), errors=Console(stderr=True)))


def run_chat(
    chat: ChatSession,
    console: Console,
    stdin: TextIO | None = None,
    errors: Console | None = None,
) -> int:
    """Read lines from `stdin` (None: the terminal, through `input()`) and chat until
    `/exit`, end of input or Ctrl-C. An error that ends the chat goes to `errors` (None:
    `console`). Returns the exit code (`exit_codes`): 0, 3 when the bus is unreachable, 2
    when a message is refused by the bus."""
    errors = errors or console
    read_line = _line_reader(console, stdin)
    console.print(f"Chatting in session [cyan]{escape(chat.session_key)}[/cyan]. {HELP}")
    while True:
        try:
            text = read_line().strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return 0
        if not text:
            continue
        if text in EXIT_COMMANDS:
            return 0
        command = parse_command(text)
        if command is not None and command.name == "new":
            console.print(f"New session [cyan]{escape(chat.new_session())}[/cyan].")
            continue
        if command is not None and command.name == "help":
            console.print(f"{HELP}\n{escape(help_text())}")
            continue
        try:
            _ask(chat, text, console, read_line)
        except KeyboardInterrupt:
            console.print("\n[dim]interrupted; the agent may still answer this session[/dim]")
            return OK
        except ChatUnavailableError as exc:
            errors.print(f"[red]error:[/red] {escape(str(exc))}")
            return exit_code_for(exc)
        except ChatError as exc:
            console.print(f"[red]{escape(str(exc))}[/red]")
            continue
        except HarnessError as exc:
            errors.print(f"[red]error:[/red] {escape(str(exc))}")
            return exit_code_for(exc)
        console.print()


def _ask(chat: ChatSession, text: str, console: Console, read_line: Callable[[], str]) -> ChatReply:
    """Send `text`, showing progress and the answer as it is written, then the reply; a risky
    tool call waiting for approval is asked in the terminal and the display goes on after."""
    with chat.send(text) as exchange:
        updates = exchange.updates()
        while True:
            asked = _follow(updates, console)
            if isinstance(asked, ChatReply):
                return asked
            chat.answer(asked.approval_id, _approval_answer(asked, console, read_line))


def _follow(updates: Iterator[object], console: Console) -> ChatReply | ApprovalAsked:
    """Show progress and the answer as it is written until the reply or an approval request
    (the live display stops for it)."""
    with ReplyDisplay(console) as display:
        for update in updates:
            if isinstance(update, ApprovalAsked):
                return update
            if isinstance(update, ChatReply):
                display.finish(update.response)
                return update
            if isinstance(update, Progress):
                display.progress(update)
    raise ChatTimeoutError("the reply stream ended without a reply")


def _approval_answer(asked: ApprovalAsked, console: Console, read_line: Callable[[], str]) -> str:
    console.print(f"[bold yellow]The agent wants to run {escape(asked.tool)}:[/bold yellow]")
    console.print(escape(asked.summary))
    console.print("Approve? [bold]y[/bold]es / [bold]n[/bold]o / [bold]s[/bold]ession-wide")
    try:
        choice = read_line().strip().lower()
    except EOFError:
        choice = "n"
    return {"y": "approve", "yes": "approve", "s": "session"}.get(choice, "deny")


def _line_reader(console: Console, stdin: TextIO | None) -> Callable[[], str]:
    def read() -> str:
        if stdin is None:
            return console.input(PROMPT)
        console.print(PROMPT, end="")
        line = stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    return read
