"""The one-line status a person sees while a tool runs: "running bash: pytest -q",
"reading notes/plan.md", "editing functions/x.py".

Built from the tool's name and arguments as the model gave them: secrets are masked with
`harness.redaction.redact` before anything is cut, the argument is folded onto one line and
cut to `MAX_TARGET_CHARS`, and a URL loses its query and fragment (where tokens travel). A
tool not named here shows as "running <name>". Pure; never raises.

    status = describe("bash", {"command": "pytest -q"})
    status.line        # "running bash: pytest -q"        (terminal, /api/chat)
    status.markdown    # "_running bash:_ `pytest -q`"    (the chat draft)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from harness.redaction import redact

MAX_TARGET_CHARS = 60
"""Longest argument shown; a longer one is cut and ends with an ellipsis."""


@dataclass(frozen=True)
class ToolStatus:
    """What a running tool is doing: `verb` ("reading") and `target` ("notes/plan.md", may be
    empty)."""

    verb: str
    target: str = ""

    @property
    def line(self) -> str:
        """Plain text: "reading notes/plan.md", "running bash: pytest -q"."""
        if not self.target:
            return self.verb
        joiner = ": " if self.verb.startswith("running ") else " "
        return f"{self.verb}{joiner}{self.target}"

    @property
    def markdown(self) -> str:
        """For a chat draft: the verb in italics, the argument as inline code (backticks in it
        become quotes, so the code span cannot be broken)."""
        if not self.target:
            return f"_{self.verb}…_"
        verb = f"{self.verb}:" if self.verb.startswith("running ") else self.verb
        code = self.target.replace("`", "'")
        return f"_{verb}_ `{code}`"


def describe(name: str, arguments: Mapping[str, Any]) -> ToolStatus:
    """The status of tool `name` called with `arguments`; see the module docstring."""
    rule = _RULES.get(name)
    if rule is None:
        return ToolStatus(f"running {_short(name)}")
    verb, argument, show = rule
    value = arguments.get(argument) if isinstance(arguments, Mapping) else None
    if argument == "path" and value in (None, ".", "./"):
        return ToolStatus(f"{verb} the workspace")
    if not isinstance(value, str) or not value.strip():
        return ToolStatus(verb)
    return ToolStatus(verb, _short(show(value)))


def _short(text: str) -> str:
    """`text` with secrets masked, on one line, cut to MAX_TARGET_CHARS."""
    one_line = " ".join(redact(text).split())
    if len(one_line) <= MAX_TARGET_CHARS:
        return one_line
    return one_line[: MAX_TARGET_CHARS - 1].rstrip() + "…"


def _first_line(command: str) -> str:
    lines = [line for line in command.strip().splitlines() if line.strip()]
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


def _without_query(url: str) -> str:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url
    if not parts.scheme:
        return url
    return urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))


def _same(value: str) -> str:
    return value


_RULES: dict[str, tuple[str, str, Callable[[str], str]]] = {
    "bash": ("running bash", "command", _first_line),
    "read": ("reading", "path", _same),
    "write": ("writing", "path", _same),
    "edit": ("editing", "path", _same),
    "ls": ("listing", "path", _same),
    "find": ("finding", "pattern", _same),
    "grep": ("searching for", "pattern", _same),
    "search": ("searching memory and documents for", "query", _same),
    "web_fetch": ("fetching", "url", _without_query),
}
"""Tool name -> (verb, the argument to show, how to shorten it)."""
