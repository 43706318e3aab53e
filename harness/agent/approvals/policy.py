"""Which tool calls wait for a person's yes (`AGENT_APPROVAL`), and how a request reads.

Pure: no I/O, no clock. The durable side (asking, waiting, recording) is in
`harness.agent.approvals.gate`.

    off    nothing asks
    risky  the default: `bash`; `write` and `edit` in a guarded folder (decided on the
           path resolved inside the workspace: the turn resolves it first, `tool_paths`):
           `functions/` (code the sidecar runs), any `.git` (a repository's config names
           commands git runs, e.g. `core.fsmonitor` on `git status`) and `.home/` (the
           sandbox's HOME: `.gitconfig`, `.npmrc`, `.bashrc`...), so that an allowlisted
           command runs no config the agent wrote unasked; `delegate_scheduled_task`
           (work that runs later, with nobody watching); any tool that declares itself
           risky (MCP tools, unless their server is marked safe)
    all    every tool call asks

A `bash` command matching an `AGENT_APPROVAL_ALLOW` pattern word by word (`ls *`,
`git status`; see `approvals.allowlist`) never asks, and neither does a tool the person allowed
"for this session", unless the turn has read outside content (`tainted`, see
`harness.agent.untrusted`): then every risky call asks, allowlisted or granted.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.agent.approvals.allowlist import command_allowed
from harness.settings import ApprovalMode
from harness.tools.sandbox import HOME_FOLDER

Decision = Literal["approve", "deny", "session"]
DECISIONS: tuple[Decision, ...] = ("approve", "deny", "session")

RISKY_TOOLS = frozenset({"bash", "delegate_scheduled_task"})
WRITING_TOOLS = frozenset({"write", "edit"})
GUARDED_ROOTS = ("functions", HOME_FOLDER)
"""Workspace folders (at its root) whose files `write` and `edit` ask about."""
GUARDED_ANYWHERE = ".git"
"""A path component whose files (or itself, a `gitdir:` file) `write` and `edit` ask about."""
MAX_SUMMARY_CHARS = 1500


@dataclass(frozen=True)
class ApprovalPolicy:
    """`AGENT_APPROVAL` and `AGENT_APPROVAL_ALLOW`, read once."""

    mode: ApprovalMode = "risky"
    allow: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, mode: ApprovalMode, allow: str) -> ApprovalPolicy:
        """The policy for a mode and a comma-separated allowlist (blank entries dropped)."""
        patterns = tuple(p.strip() for p in allow.split(",") if p.strip())
        return cls(mode=mode, allow=patterns)

    def needs_approval(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        granted: Collection[str] = (),
        *,
        risky: bool = False,
        tainted: bool = False,
    ) -> bool:
        """True when this call must wait for a person. `granted` holds the tools allowed for
        the session; `risky` is the tool's own declaration (`Tool.risky`: MCP tools of servers
        not marked safe). `tainted`: the turn has read outside content (`untrusted`), so a
        risky call asks even when the allowlist or a grant would let it through (unless the
        mode is `off`). Must not raise, whatever the arguments look like."""
        if tainted and self.mode != "off" and _risky_call(tool, arguments, risky):
            return True
        if self.mode == "off" or tool in granted:
            return False
        if tool == "bash" and self.allowed_command(str(arguments.get("command", ""))):
            return False
        if self.mode == "all":
            return True
        return _risky_call(tool, arguments, risky)

    def allowed_command(self, command: str) -> bool:
        """True when `command` matches an allowlist pattern word by word, options included
        (`approvals.allowlist`): a chained or redirected command (`ls; rm -rf ~`) never
        matches a pattern, and a wildcard (`git *`) never allows a program that can run
        other programs."""
        return command_allowed(command, self.allow)


def _risky_call(tool: str, arguments: Mapping[str, Any], risky: bool) -> bool:
    """True for the calls `risky` mode asks about (see the module docstring)."""
    if risky or tool in RISKY_TOOLS:
        return True
    return tool in WRITING_TOOLS and _under_guarded_folder(str(arguments.get("path", "")))


def _under_guarded_folder(path: str) -> bool:
    """True when workspace-relative `path` is, or lies in, a guarded folder."""
    normal = posixpath.normpath(path.strip().lstrip("/")) if path.strip() else ""
    parts = normal.split("/")
    return parts[0] in GUARDED_ROOTS or GUARDED_ANYWHERE in parts


def summarize_call(tool: str, arguments: Mapping[str, Any]) -> str:
    """What the person sees: the command, the path and the change, or the arguments,
    truncated to about `MAX_SUMMARY_CHARS` characters."""
    if tool == "bash":
        text = f"$ {arguments.get('command', '')}"
    elif tool == "write":
        text = f"write {arguments.get('path', '')}\n{arguments.get('content', '')}"
    elif tool == "edit":
        changes = [
            f"- {e.get('old_text', '')}\n+ {e.get('new_text', '')}"
            for e in arguments.get("edits", []) or []
            if isinstance(e, Mapping)
        ]
        text = f"edit {arguments.get('path', '')}\n" + "\n".join(changes)
    else:
        pairs = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        text = f"{tool}({pairs})"
    if len(text) > MAX_SUMMARY_CHARS:
        text = text[: MAX_SUMMARY_CHARS - 20] + "\n… (truncated)"
    return text
