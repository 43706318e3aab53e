"""The status line of a running tool: what it does, short, on one line, without secrets."""

from __future__ import annotations

import pytest

from harness.agent.tool_status import MAX_TARGET_CHARS, describe
from harness.redaction import register_secret


@pytest.mark.parametrize(
    ("name", "arguments", "line"),
    [
        ("bash", {"command": "pytest -q"}, "running bash: pytest -q"),
        ("read", {"path": "notes/plan.md"}, "reading notes/plan.md"),
        ("edit", {"path": "functions/x.py", "edits": []}, "editing functions/x.py"),
        ("write", {"path": "a.txt", "content": "body"}, "writing a.txt"),
        ("ls", {"path": "."}, "listing the workspace"),
        ("grep", {"pattern": "TODO", "path": "."}, "searching for TODO"),
        ("search", {"query": "door code"}, "searching memory and documents for door code"),
        ("web_fetch", {"url": "https://ex.com/a?token=zz#f"}, "fetching https://ex.com/a"),
        ("remember", {"fact": "x"}, "running remember"),
        ("bash", {}, "running bash"),
        ("bash", {"command": 42}, "running bash"),
    ],
)
def test_a_tool_call_reads_as_what_it_does(
    name: str, arguments: dict[str, object], line: str
) -> None:
    assert describe(name, arguments).line == line


def test_a_multi_line_command_shows_its_first_line_and_a_long_one_is_cut() -> None:
    # Given a script of several lines, and a very long one-liner
    script = describe("bash", {"command": "cd work\nmake test\nmake install"})
    long = describe("bash", {"command": "echo " + "word " * 40})
    # Then the script shows as its first line with a mark that more follows
    assert script.line == "running bash: cd work …"
    # And the long command is cut to the limit with an ellipsis
    assert len(long.target) == MAX_TARGET_CHARS and long.target.endswith("…")


def test_a_registered_secret_is_masked_before_the_argument_is_cut() -> None:
    # Given a deployment secret that sits across the cutting point of a long command
    secret = "S3cr3tValueFromSettings"
    register_secret(secret)
    command = "x" * (MAX_TARGET_CHARS - 10) + f" --pass {secret}"
    # When it is described
    status = describe("bash", {"command": command})
    # Then not even the part of the secret before the cut is shown
    assert "S3cr3t" not in status.line and "S3cr3t" not in status.markdown


def test_the_draft_markdown_keeps_the_argument_in_one_code_span() -> None:
    # Given a command with backticks and Markdown in it
    status = describe("bash", {"command": "echo `date` *bold*"})
    # Then the draft shows the verb in italics and the argument as code that cannot break
    assert status.markdown == "_running bash:_ `echo 'date' *bold*`"
