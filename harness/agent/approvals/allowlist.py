"""Which `bash` commands `AGENT_APPROVAL_ALLOW` lets run without asking.

Pure: no I/O. A command is split into words the way the shell splits it (`shlex`), and so is
each pattern; they match word by word (`fnmatch` per word: `*`, `?`, `[...]`), options
included. A `*` standing alone as the pattern's last word means "any further words, or none":

    ls *          ls, ls -la notes, ls *.md
    git status    git status, git  'status'; not git status --short, not git -c x=y status
    wc -l *       wc -l, wc -l notes/a.md notes/b.md; not wc -c

A pattern with a wildcard never allows a program that can run other programs (`RUNNERS`):
with it, any option is an exec (`git -c core.pager=sh`, `find -exec`, `xargs sh`). Only a
pattern without wildcards, which names every word, allows such a program. Nor does a wildcard
pattern allow a program given by a path or an assignment (`./x`, `A=1 sh`), or a command
with a `$` or brace expansion, which the shell would turn into other words than those matched.

An exact pattern is only as safe as the files its program reads: `git status` runs the
`core.fsmonitor` command of `.git/config`, `make test` the Makefile, `pytest -q` conftest.py
(`WORKSPACE_LOADERS`; `allowlist_warnings` names such patterns at start-up and in `harness
doctor`). Writes to `.git` and `.home/` ask for that reason (`approval_policy`).

A command that chains, pipes or redirects (`;`, `&`, `|`, `<`, `>`, backticks, `$(`, a newline)
matches only a pattern equal to it character for character; one that does not parse (an open
quote) matches nothing.
"""

from __future__ import annotations

import fnmatch
import logging
import posixpath
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

WORKSPACE_LOADERS: tuple[str, ...] = (
    # interpreters: a file or module they are given may be the workspace's (`python -m x`
    # imports the workspace's x.py first, `node` its node_modules)
    *("python*", "pypy*", "perl*", "ruby*", "irb", "node*", "nodejs", "deno", "bun*", "php*"),
    # version control, editors and clients whose config (in the repository or in HOME, which
    # is the workspace's `.home` in the sandbox) names commands they run
    *("git", "vi", "vim", "nvim", "view", "emacs", "ssh", "scp", "sftp", "docker", "podman"),
    "kubectl",
    # build tools, package managers and task runners, which run the project's own scripts
    *("make", "cmake", "ninja", "meson", "scons", "just", "task", "invoke", "rake", "bundle"),
    *("npm", "npx", "pnpm", "yarn", "pip*", "pipx", "uv", "uvx", "poetry", "pdm", "hatch"),
    *("conda", "mamba", "pixi", "composer", "gem", "tox", "nox", "cargo", "go", "gradle*"),
    *("mvn", "ant", "sbt", "lein", "mix", "stack", "cabal", "dotnet", "swift", "bazel*"),
    *("pre-commit", "direnv"),
    # test runners, which import the project's tests and their config code (conftest.py)
    *("pytest", "py.test", "nose2", "jest", "vitest", "mocha", "karma", "ava", "phpunit"),
    *("rspec", "cucumber", "behave", "coverage"),
    # linters, bundlers and doc builders that load plugins or a config written as code
    *("mypy", "pylint", "flake8", "eslint", "prettier", "stylelint", "babel", "webpack"),
    *("vite", "rollup", "gulp", "grunt", "sphinx-build", "mkdocs"),
)
"""Programs that read config or code from the working folder or HOME: an exact
`AGENT_APPROVAL_ALLOW` entry for one (`git status`, `make test`, `pytest -q`) trusts files the
agent can write (`allowlist_warnings` says so). Writes to `.git` and `.home/` ask
(`approvals.policy`); a Makefile, conftest.py or package.json does not."""

RUNNERS: tuple[str, ...] = (
    # shells, and the shell's own ways of running a word as a command
    *("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "csh", "tcsh", "fish", "pwsh"),
    *("exec", "eval", "command", "builtin", "source", ".", "enable", "trap", "coproc"),
    # interpreters not above
    *("lua*", "luajit", "tclsh*", "wish*", "expect", "R", "Rscript", "julia", "java", "jshell"),
    *("awk", "gawk", "mawk", "nawk", "busybox", "toybox"),
    # programs that run a program given in their arguments
    *("env", "xargs", "parallel", "nice", "nohup", "timeout", "watch", "time", "stdbuf"),
    *("setsid", "flock", "chroot", "unshare", "nsenter", "ionice", "taskset", "chrt", "script"),
    *("strace", "ltrace", "gdb", "valgrind", "sudo", "su", "doas", "pkexec", "runuser"),
    *("tmux", "screen", "socat", "nc", "ncat", "netcat", "systemd-run"),
    # programs with an option or a command that runs something
    *("find", "fd", "fdfind", "rg", "sed", "ed", "ex", "tar", "zip", "rsync", "sort", "patch"),
    *("nano", "less", "more", "most", "man", "xdg-open"),
    *WORKSPACE_LOADERS,
)
"""Programs a wildcard pattern never allows: they can run other programs (through their
arguments, options, config files, or the project's own scripts). Names or fnmatch patterns,
matched against the program's base name. Not a complete list of what runs things: anything a
wildcard allows runs with whatever options the agent chooses, so prefer exact patterns."""

CHAINING = (";", "&", "|", ">", "<", "`", "$(", "\n")
WILDCARDS = frozenset("*?[")
_PROGRAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def is_runner(program: str) -> bool:
    """True when `program` (a name or a path) is one of `RUNNERS`."""
    return _named(program, RUNNERS)


def loads_workspace(program: str) -> bool:
    """True when `program` (a name or a path) is one of `WORKSPACE_LOADERS`."""
    return _named(program, WORKSPACE_LOADERS)


def _named(program: str, names: Sequence[str]) -> bool:
    name = posixpath.basename(program)
    return any(fnmatch.fnmatchcase(name, known) for known in names)


def command_allowed(command: str, patterns: Sequence[str]) -> bool:
    """True when `command` (stripped) equals one of `patterns`, or matches one as the module
    docstring says. Must not raise."""
    command = command.strip()
    if not command:
        return False
    if command in patterns:
        return True
    if any(token in command for token in CHAINING):
        return False
    words = _words(command)
    if not words:
        return False
    return any(_matches(words, command, pattern) for pattern in patterns)


@dataclass(frozen=True)
class _Word:
    """A word of a pattern: `text` as the shell passes it, `glob` as an fnmatch pattern in
    which the wildcard characters the pattern quoted or escaped (`'*.py'`, `\\*`) match only
    themselves."""

    text: str
    glob: str

    @property
    def wild(self) -> bool:
        """True when the word has a wildcard the pattern did not quote."""
        return self.glob != _escape(self.text)


def _matches(words: list[str], command: str, pattern: str) -> bool:
    wanted = _pattern_words(pattern)
    if not wanted:
        return False
    if not any(w.wild for w in wanted):
        return words == [w.text for w in wanted]
    if not _PROGRAM.fullmatch(words[0]) or is_runner(words[0]) or _expands(command):
        return False
    if wanted[-1].glob == "*":
        wanted = wanted[:-1]
        words = words[: len(wanted)]
    return len(words) == len(wanted) and all(
        fnmatch.fnmatchcase(word, w.glob) for word, w in zip(words, wanted, strict=True)
    )


def _words(text: str) -> list[str]:
    """The shell words of `text`, or [] when it does not parse."""
    try:
        return shlex.split(text)
    except ValueError:
        return []


def _pattern_words(pattern: str) -> list[_Word]:
    """The words of `pattern`, or [] when it does not parse (or parses differently from
    `shlex`, which splits the commands)."""
    words: list[_Word] = []
    text: list[str] | None = None
    glob: list[str] = []
    quote = ""
    escaped = False
    for char in pattern:
        literal = escaped or bool(quote)
        if escaped:
            escaped = False
            if quote and char not in '"\\':  # in double quotes, \ escapes only " and \
                text = text if text is not None else []
                text.append("\\")
                glob.append("\\")
        elif char == "\\" and (not quote or quote == '"'):
            escaped = True
            continue
        elif char == quote:
            quote = ""
            continue
        elif not quote and char in "'\"":
            quote, text = char, text if text is not None else []
            continue
        elif not quote and char.isspace():
            if text is not None:
                words.append(_Word("".join(text), "".join(glob)))
            text, glob = None, []
            continue
        text = text if text is not None else []
        text.append(char)
        glob.append(_escape(char) if literal else char)
    if text is not None:
        words.append(_Word("".join(text), "".join(glob)))
    if quote or escaped or [w.text for w in words] != _words(pattern):
        return []
    return words


def _escape(text: str) -> str:
    """`text` as an fnmatch pattern that matches only itself."""
    return "".join(f"[{c}]" if c in WILDCARDS else c for c in text)


def _expands(command: str) -> bool:
    """True when the shell would expand part of `command` into words other than its shlex
    words: a `$` outside single quotes, or a brace outside quotes."""
    quote = ""
    escaped = False
    for char in command:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
            elif char == "$" and quote == '"':
                return True
        elif char in "'\"":
            quote = char
        elif char in "${}":
            return True
    return False


def allowlist_warnings(patterns: Sequence[str]) -> list[str]:
    """One line per pattern that does not do what it seems to: one that does not parse; a
    wildcard pattern over a program `RUNNERS` names (or over any program), which therefore
    never allows that program; an exact pattern over a program of `WORKSPACE_LOADERS`, which
    runs whatever config or code the agent wrote for it."""
    lines = []
    for pattern in patterns:
        wanted = _pattern_words(pattern)
        if not wanted:
            lines.append(
                f"AGENT_APPROVAL_ALLOW pattern {pattern!r} does not parse: it never matches"
            )
        elif wanted[0].wild:
            lines.append(
                f"AGENT_APPROVAL_ALLOW pattern {pattern!r} has a wildcard for the program: it "
                "never allows one that can run other programs (git, find, sh, python, ...)"
            )
        elif any(w.wild for w in wanted) and is_runner(wanted[0].text):
            lines.append(
                f"AGENT_APPROVAL_ALLOW pattern {pattern!r} is a wildcard over {wanted[0].text}, "
                f"which can run other programs: it never allows {wanted[0].text} (list each "
                "full command)"
            )
        elif not any(w.wild for w in wanted) and loads_workspace(wanted[0].text):
            lines.append(
                f"AGENT_APPROVAL_ALLOW pattern {pattern!r} runs {wanted[0].text} unasked, which "
                "reads config or code from the workspace: it trusts files the agent can write "
                "(writes to .git and .home/ ask; a Makefile, conftest.py or package.json does not)"
            )
    return lines


def announce_allowlist(patterns: Sequence[str]) -> None:
    """Log `allowlist_warnings` at start-up, one warning line each."""
    for line in allowlist_warnings(patterns):
        log.warning("%s", line)
