"""A third-party hook package, installed for one test: a `*.dist-info` directory declaring
`harness.hooks` entry points, put on `sys.path` where `importlib.metadata` finds installed
packages, so the agent loads it through the same door as a real install.

Its hooks: `NoBash` (a class) vetoes every `bash` call and notes each turn it starts;
`BROKEN` (an object) raises at every point."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.agent.user_hooks import RunInfo, load_hook_plugins
from harness.llm.types import ToolCall, ToolResult
from tests.fakes.installed_package import installed_package

VETO = "bash is not allowed by this fleet's audit hook."
STARTED: list[RunInfo] = []
"""The turns `NoBash.on_start` was told about, in order."""


class NoBash:
    """Vetoes `bash`; lets every other call through unchanged (by returning None)."""

    def on_start(self, info: RunInfo) -> None:
        STARTED.append(info)

    def before_tool(self, call: ToolCall) -> ToolResult | None:
        if call.name == "bash":
            return ToolResult(tool_call_id=call.id, content=VETO, is_error=True)
        return None


class _Broken:
    def on_start(self, info: RunInfo) -> None:
        raise RuntimeError("on_start broke")

    def before_model(self, messages: object) -> None:
        raise RuntimeError("before_model broke")

    def before_tool(self, call: ToolCall) -> ToolCall:
        raise RuntimeError("before_tool broke")

    def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        raise RuntimeError("after_tool broke")


BROKEN = _Broken()


@contextmanager
def installed_hooks(root: Path, **hooks: str) -> Iterator[None]:
    """Install a package under `root` declaring each `name=ATTRIBUTE` of this module as a
    hook plug-in, and load the hook plug-ins, for the duration of the block; afterwards the
    process's own are loaded again."""
    entries = {name: f"{__name__}:{target}" for name, target in hooks.items()}
    with installed_package(root, "harness-fake-hooks", "harness.hooks", entries, load_hook_plugins):
        load_hook_plugins()
        yield
