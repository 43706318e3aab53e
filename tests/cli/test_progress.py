"""The CLI's spinner (`harness.commands.progress.waiting`): drawn on a terminal, absent from
pipes, files and machine output."""

from __future__ import annotations

import io

from rich.console import Console

from harness.commands.progress import waiting


def _console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=80), out


def test_the_spinner_is_drawn_on_a_terminal() -> None:
    # Given a console that is a terminal
    console, out = _console(terminal=True)
    # When the CLI waits
    with waiting("waiting for the reply", console=console) as wait:
        wait.update("still waiting for the reply")
    # Then the spinner and its text were drawn
    assert wait.shown
    assert "still waiting for the reply" in out.getvalue(), repr(out.getvalue())


def test_the_spinner_is_hidden_when_not_a_terminal() -> None:
    # Given a console writing into a pipe or a file
    console, out = _console(terminal=False)
    # When the CLI waits
    with waiting("waiting for the reply", console=console) as wait:
        wait.update("still waiting")
    # Then nothing at all was written
    assert not wait.shown
    assert out.getvalue() == ""


def test_the_spinner_is_hidden_for_machine_output_even_on_a_terminal() -> None:
    # Given a terminal, and a command asked for --json
    console, out = _console(terminal=True)
    # When the CLI waits with hidden=True
    with waiting("waiting", hidden=True, console=console) as wait:
        pass
    # Then nothing was written
    assert not wait.shown and out.getvalue() == ""


def test_the_spinner_lets_the_blocks_error_through() -> None:
    # Given a terminal
    console, _ = _console(terminal=True)
    # When the block fails, Then its error leaves the spinner unchanged
    try:
        with waiting("waiting", console=console):
            raise KeyError("gone")
    except KeyError as exc:
        assert exc.args == ("gone",)
    else:
        raise AssertionError("the block's error was swallowed")
