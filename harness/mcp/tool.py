"""An MCP server's tool as a harness `Tool`, offered to the model as `server__tool`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.mcp.connection import McpServerError, RemoteTool, ServerConnection
from harness.tools.base import Tool, ToolContext, ToolOutcome
from harness.tools.errors import ToolError

MAX_RESULT_CHARS = 20_000
MAX_STRUCTURED_CHARS = 100_000
SEPARATOR = "__"


class McpArguments(BaseModel):
    """Any JSON object: the server validates its own arguments against its schema."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArguments]):
    """Calls one remote tool. `risky` is True unless the server is marked `safe` in mcp.json,
    so an approval policy treats it like the built-in risky tools; its answers are outside
    content (`Tool.outside_content`) either way. A down, dying or silent
    server, and an error the tool itself reports, become a `ToolError` the model reads."""

    parameters = McpArguments
    outside_content = True  # whatever the server answers is outside the agent's own work

    def __init__(self, connection: ServerConnection, remote: RemoteTool) -> None:
        self.connection = connection
        self.remote_name = remote.name
        self.name = f"{connection.config.name}{SEPARATOR}{remote.name}"[:64]
        self.description = (
            remote.description or f"{remote.name} (MCP server {connection.config.name})"
        )
        self.schema = (
            remote.input_schema
            if remote.input_schema.get("type") == "object"
            else {"type": "object"}
        )
        self.timeout = connection.config.timeout + 5.0  # the call's own timeout fires first
        self.risky = not connection.config.safe

    def json_schema(self) -> dict[str, Any]:
        """The schema the server published for this tool."""
        return self.schema

    def run(self, params: McpArguments, ctx: ToolContext) -> str | ToolOutcome:
        """Call the remote tool; the text is capped at `MAX_RESULT_CHARS`. The server's
        structured content, when it sent some (and it fits `MAX_STRUCTURED_CHARS` as JSON),
        comes beside the text, which the model reads as before."""
        try:
            result = self.connection.call(
                self.remote_name, params.model_dump(), self.connection.config.timeout
            )
        except McpServerError as exc:
            raise ToolError(str(exc)) from exc
        text = result.text
        if len(text) > MAX_RESULT_CHARS:
            cut = len(text) - MAX_RESULT_CHARS
            text = f"{text[:MAX_RESULT_CHARS]}\n[... {cut} more characters cut]"
        if result.is_error:
            raise ToolError(text or f"{self.name} failed")
        structured = result.structured
        if structured is not None and len(json.dumps(structured)) > MAX_STRUCTURED_CHARS:
            structured = None  # the text (capped) still says it; the journal is no dump
        if structured is None:
            return text or "(no output)"
        return ToolOutcome(text or "(no output)", structured=structured)
