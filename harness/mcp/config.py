"""Reading the operator's `mcp.json` (the `MCP_CONFIG` file, never one in the workspace: see
`location.py`), in the format other MCP clients use:

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-files"], "env": {"TOKEN": "${TOKEN}"}},
        "search": {"url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${KEY}"}}
    }}

`${VAR}` in any string is replaced from the environment, so secrets stay out of the file (the
file is the operator's, so filling it from the fleet's environment gives nothing away). A
server whose variable is unset is kept, with a `problem`, so that `harness mcp list` and
`harness doctor` can say why it does not run; the other servers are unaffected. Harness extras
per server: `timeout` (seconds per call, default 60), `safe` (true exempts its tools from the
approval policy for risky tools), `disabled`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import ConfigurationError

CONFIG_FILE = "mcp.json"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,30}$")


class ServerConfig(BaseModel):
    """One server: `command` (stdio) or `url` (streamable HTTP). `problem` is set, and the
    server is never started, when the entry cannot be used as written."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=60.0, gt=0)
    safe: bool = False
    disabled: bool = False
    problem: str | None = None

    @property
    def transport(self) -> str:
        """`stdio` or `http`."""
        return "http" if self.url else "stdio"


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> list[ServerConfig]:
    """The servers in the config file `path`; an empty list when the file does not exist.

    Raises `ConfigurationError` when the file cannot be read, is not JSON or has no
    `mcpServers` object. Problems with one server (no command or url, a bad name, an unset
    variable) are reported on that server's `problem` instead.
    """
    return parse_config(read_config_text(path), path, environ)


def parse_config(
    text: str | None, path: Path, environ: Mapping[str, str] | None = None
) -> list[ServerConfig]:
    """The servers in `text`, the content of `path` (None: the file does not exist, so no
    servers). Raises `ConfigurationError` as `load_config` does."""
    if text is None:
        return []
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"{path} is not valid JSON: {exc}") from exc
    servers = raw.get("mcpServers") if isinstance(raw, dict) else None
    if not isinstance(servers, dict):
        raise ConfigurationError(f'{path} needs an object "mcpServers": {{"name": {{...}}}}')
    env = os.environ if environ is None else environ
    return [_server(name, entry, env) for name, entry in servers.items()]


def read_config_text(path: Path) -> str | None:
    """The file's text; None when it does not exist. Raises `ConfigurationError` when it
    exists but cannot be read as UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc


def _server(name: str, entry: Any, env: Mapping[str, str]) -> ServerConfig:
    if not _NAME.match(name) or "__" in name:
        problem = "the name must be 1-30 letters, digits, - or _, without a double underscore"
        return ServerConfig(
            name=re.sub(r"[^A-Za-z0-9_-]", "_", name)[:30] or "server", problem=problem
        )
    if not isinstance(entry, dict):
        return ServerConfig(name=name, problem="the entry must be an object")
    missing: list[str] = []
    expanded = _expand(entry, env, missing)
    try:
        server = ServerConfig.model_validate({**expanded, "name": name})
    except ValidationError as exc:
        return ServerConfig(name=name, problem=f"invalid entry: {exc.errors()[0]['msg']}")
    if missing:
        names = ", ".join(sorted(set(missing)))
        return server.model_copy(update={"problem": f"environment variable(s) not set: {names}"})
    if bool(server.command) == bool(server.url):
        return server.model_copy(update={"problem": 'give either "command" or "url"'})
    return server


def _expand(value: Any, env: Mapping[str, str], missing: list[str]) -> Any:
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            if match.group(1) not in env:
                missing.append(match.group(1))
                return ""
            return env[match.group(1)]

        return _VAR.sub(replace, value)
    if isinstance(value, list):
        return [_expand(v, env, missing) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, env, missing) for k, v in value.items()}
    return value
