"""`send_file`: the agent sends a file from its workspace to the conversation.

The tool runs inside the agent's turn, like delegation: the path is checked (confined to the
workspace like every file tool, an existing regular file, not over `MEDIA_MAX_BYTES`) in a
step, then `agent.file.ready` is published as a step, so a replayed turn never sends twice.
The channel's `send-file` function posts it (`channels.media.outbox`), once.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from pydantic import Field

from harness.events import FileReady, ReplyTarget
from harness.llm.types import ToolCall, ToolResult
from harness.runtime.steps import Context
from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.paths import display_path, resolve_in_workspace

SEND_FILE = "send_file"


class SendFileParams(ToolParams):
    """Arguments of `send_file`."""

    path: str = Field(min_length=1, description="The file to send, relative to the workspace.")
    caption: str = Field(default="", max_length=1000, description="Optional text to go with it.")


class SendFileTool(Tool[SendFileParams]):
    """The spec the model sees; the call itself is handled by the turn (`send_file`)."""

    name = SEND_FILE
    description = (
        "Send a file from the workspace to the person in this chat (images are shown as photos). "
        "Use it for files you made or were asked for; say what it is in `caption`."
    )
    parameters = SendFileParams

    def run(self, params: SendFileParams, ctx: ToolContext) -> str:
        raise ToolError("send_file runs inside the agent's turn, not through the registry")


def send_file(
    ctx: Context, workspace: Path, reply: ReplyTarget | None, call: ToolCall, max_bytes: int
) -> ToolResult:
    """Handle one `send_file` call durably; every problem becomes an error result."""
    try:
        params = SendFileParams.model_validate(call.arguments)
    except ValueError as exc:
        return ToolResult(tool_call_id=call.id, content=f"invalid arguments: {exc}", is_error=True)
    if reply is None:
        return ToolResult(
            tool_call_id=call.id, content="there is no chat to send a file to", is_error=True
        )
    checked = ctx.step.run("send-file-check", _check, workspace, params.path, max_bytes)
    if "error" in checked:
        return ToolResult(tool_call_id=call.id, content=checked["error"], is_error=True)
    data = FileReady(
        path=checked["path"],
        name=checked["name"],
        mime_type=checked["mime_type"],
        caption=params.caption,
        channel=reply.channel,
        destination=reply.destination,
        channel_meta=reply.channel_meta,
    )
    ctx.step.send_event("file", data.to_event())
    return ToolResult(tool_call_id=call.id, content=f"Sent {checked['shown']} to the chat.")


def _check(workspace: Path, path: str, max_bytes: int) -> dict[str, str]:
    try:
        resolved = resolve_in_workspace(workspace, path)
    except ToolError as exc:
        return {"error": str(exc)}
    shown = display_path(workspace, resolved)
    if not resolved.is_file():
        return {"error": f"{shown} is not a file in the workspace"}
    if resolved.stat().st_size > max_bytes:
        return {"error": f"{shown} is larger than MEDIA_MAX_BYTES ({max_bytes} bytes)"}
    mime = mimetypes.guess_type(resolved.name)[0] or "application/octet-stream"
    return {"path": str(resolved), "name": resolved.name, "mime_type": mime, "shown": shown}
