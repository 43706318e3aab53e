"""The status line as a hook: "thinking", "running bash: pytest -q", while a turn runs.

When a model call starts, the session's progress channel is told `thinking`; when a tool
call starts, `running` with the call's status line (`tool_status.describe`), and the chat
draft, if the turn draws one, shows that line in Markdown. Both are watch points
(`harness.agent.hooks`): called inside the step, so a replayed step is not reported again.
"""

from __future__ import annotations

from harness.agent import progress, tool_status
from harness.agent.hooks import Hooks
from harness.agent.live_text import LiveText
from harness.llm.provider import TextSink
from harness.llm.types import ToolCall
from harness.runtime.steps import Context


class StatusLine(Hooks):
    """What the run is doing, on the progress channel of `session_key` (none without one)
    and, with `live`, in the draft. Must not raise, like `progress.report_step`."""

    def __init__(self, ctx: Context, session_key: str | None, live: LiveText | None) -> None:
        self.ctx = ctx
        self.session_key = session_key
        self.live = live

    def model_started(self, think: int, attempt: int) -> TextSink | None:
        """Report `thinking`; streams nothing."""
        progress.report_step(self.ctx, self.session_key, progress.THINKING)
        return None

    def tool_started(self, call: ToolCall) -> None:
        """Report the tool's status line, and show it in the draft."""
        status = tool_status.describe(call.name, call.arguments)
        progress.report_step(self.ctx, self.session_key, progress.RUNNING, call.name, status.line)
        if self.live is not None:
            self.live.status(status.markdown)
