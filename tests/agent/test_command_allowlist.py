"""`AGENT_APPROVAL_ALLOW`: patterns match the command's words, options included, and a
wildcard never allows a program that can run other programs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.agent.approvals.allowlist import (
    allowlist_warnings,
    announce_allowlist,
    command_allowed,
    is_runner,
)
from harness.agent.deps import build_deps
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer

PATTERNS = ("ls *", "git status", "wc -l *", "git *", "find *", "cat notes/*")


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la notes",
        "ls *.md",
        "git status",
        "git  'status'",
        "wc -l",
        "wc -l notes/a.md notes/b.md",
        "cat notes/a.md",
    ],
)
def test_allowlist_allows_what_a_person_expects_from_the_pattern(command: str) -> None:
    # Given "ls *, git status, wc -l *, cat notes/*" / When the command matches word by word
    # Then it runs without asking
    assert command_allowed(command, PATTERNS), f"{command!r} should be allowed"


@pytest.mark.parametrize(
    "command",
    [
        "git -c core.pager=sh log",
        "git log",
        "git status --short",
        "find . -exec id ;",
        "find . -name x -delete",
        "/usr/bin/git status",
        "wc -c",
        "wc",
        "cat notes/a.md other.md",
        "lsof",
        "ls 'unterminated",
    ],
)
def test_allowlist_wildcard_never_smuggles_options_into_a_runner(command: str) -> None:
    # Given "git *" and "find *" among the patterns / When git or find gets any other words
    # (or the words do not match, or the command does not parse) / Then it asks
    assert not command_allowed(command, PATTERNS), f"{command!r} slipped through"


@pytest.mark.parametrize(
    "command",
    [
        "sh -c id",
        "python3 -c 'import os'",
        "./evil.sh",
        "A=1 sh",
        "$SHELL -c id",
        "ls $HOME",
        'ls "${IFS}x"',
        "ls {-R,/}",
        "xargs id",
        "env sh",
    ],
)
def test_allowlist_wildcard_program_allows_no_runner_path_or_expansion(command: str) -> None:
    # Given the pattern "*" (any command) and "ls *" / When the command names a runner, a path,
    # an assignment, or has a $ or brace expansion / Then it asks
    assert not command_allowed(command, ("*", "ls *")), f"{command!r} slipped through"


def test_allowlist_exact_pattern_allows_a_runner_with_exactly_those_words() -> None:
    # Given exact patterns for runners
    patterns = ("git status", "make test", "find . -name '*.py'")
    # Then exactly those words run, quoting aside, and nothing more
    assert command_allowed("git status", patterns)
    assert command_allowed("make test", patterns)
    assert command_allowed('find . -name "*.py"', patterns)
    assert not command_allowed("make test install", patterns)
    assert not command_allowed("git status; id", patterns)


def test_allowlist_quoted_dollar_and_braces_are_plain_words() -> None:
    # Given "echo *" / When $ and braces sit inside single quotes / Then nothing expands
    assert command_allowed("echo '$HOME {a,b}'", ("echo *",))
    assert not command_allowed('echo "$HOME"', ("echo *",))


def test_is_runner_knows_interpreters_by_name_and_path() -> None:
    assert is_runner("python3.12") and is_runner("/usr/bin/git") and is_runner("xargs")
    assert not is_runner("ls") and not is_runner("wc")


@pytest.mark.parametrize(
    "pattern",
    ["pytest -q *", "py.test *", "jest *", "tox *", "nox *", "cargo test *", "go test *"],
)
def test_allowlist_wildcard_never_allows_a_test_or_build_runner(pattern: str) -> None:
    # Given a wildcard pattern over a test or build runner, which imports the workspace's
    # code and config (conftest.py, build scripts) / When the agent runs it with any words
    command = pattern.replace("*", "tests").strip()
    # Then it asks: the pattern never allows the runner
    assert not command_allowed(command, (pattern,)), f"{pattern!r} allowed {command!r}"
    assert is_runner(command.split()[0])


def test_allowlist_warnings_name_each_pattern_that_does_other_than_it_seems(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given patterns over runners, a wildcard program, one that does not parse, exact
    # patterns over programs that read the workspace's config, and fine ones
    patterns = ["git *", "find *", "* --help", "ls 'x", "ls *", "git status", "make test", "wc -l"]
    # When the worker announces them
    with caplog.at_level(logging.WARNING, logger="harness.agent.approvals.allowlist"):
        announce_allowlist(patterns)
    # Then there is one warning line per offending pattern, naming it
    lines = [r.getMessage() for r in caplog.records]
    offending = ["git *", "find *", "* --help", "ls 'x", "git status", "make test"]
    assert len(lines) == len(offending), lines
    for pattern, line in zip(offending, lines, strict=True):
        assert repr(pattern) in line, line
    # And an exact pattern over git or make says it trusts the workspace's files
    assert all("trusts files the agent can write" in line for line in lines[-2:]), lines
    assert allowlist_warnings(["ls *", "wc -l"]) == []


def test_worker_start_up_warns_once_per_wildcard_over_a_runner(
    tmp_path: Path, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Given AGENT_APPROVAL_ALLOW="git *,find *,ls *"
    settings = make_settings(
        tmp_path / "workspace", model_server, agent_approval_allow="git *,find *,ls *"
    )
    # When a worker builds its agent dependencies
    with caplog.at_level(logging.WARNING, logger="harness.agent.approvals.allowlist"):
        build_deps(settings).close()
    # Then one warning line names each of git * and find *
    lines = [r.getMessage() for r in caplog.records if "AGENT_APPROVAL_ALLOW" in r.getMessage()]
    assert len(lines) == 2 and "'git *'" in lines[0] and "'find *'" in lines[1], lines
