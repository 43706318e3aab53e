"""The tool abstraction and the registry the agent loop executes tool calls through.

A tool is a name, a description, a pydantic model for its parameters (the JSON Schema given to
the model is generated from it, never written by hand), a timeout and `run(params, ctx) -> str`.
The registry validates the model's arguments, runs the tool in a worker thread under its
timeout, and encodes every failure in the returned `ToolOutcome`: `execute` does not raise.

Timeouts. Python code in a thread cannot be killed. On timeout the registry sets the call's
`ctx.cancel` event and returns a timeout error at once; the thread is left to finish on its own.
So a pure-Python tool must bound its own work (web_fetch's httpx2 timeout and total deadline,
grep's per-file cancel check); a tool that starts processes must kill them when `ctx.cancel` is
set (bash kills its whole process group).

Secrets. A tool's output is the model's input and is kept in the session and the run's
journal, so every registered secret (`harness.credentials`: the Redis password, API keys,
tokens) is masked in it here, whatever the tool (bash printing a password it found, a fetched
page, an MCP server's answer). Only registered values: a credential-shaped string in the
agent's own files (`token=abc123` in a test) is data, and masking it would break `edit`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import logging
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.redaction import redact_registered
from harness.text import map_json_strings
from harness.tools.errors import ToolError

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_POLL_SECONDS = 0.05
_CANCEL_GRACE_SECONDS = 5.0


class ToolParams(BaseModel):
    """Base for tool parameter models: unknown arguments are rejected, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


P = TypeVar("P", bound=BaseModel)


@dataclass(frozen=True)
class ToolContext:
    """What a tool may use besides its arguments.

    `workspace` is the folder file tools are confined to and bash runs in. `cancel`, when set,
    asks the tool to stop early (the registry hands each call its own event, set on timeout or
    when the caller's event is set). `allow_shell` gates the bash tool. `transcript`, when set,
    is the conversation's own session file, the one private file `read` and `bash` may read
    (never write). `extras` is opaque to this package: the agent passes what its own tools
    need.
    """

    workspace: Path
    cancel: threading.Event | None = None
    allow_shell: bool = False
    transcript: Path | None = None
    extras: Mapping[str, object] = field(default_factory=dict)

    def cancelled(self) -> bool:
        """Return True if the call has been asked to stop."""
        return self.cancel is not None and self.cancel.is_set()


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call. `content`, always plain text, is what the model reads;
    `structured`, when the tool gave one, is the same result as JSON data, kept with the
    run (the tool call's step) for whoever reads it later and never sent to the model."""

    content: str
    is_error: bool = False
    structured: dict[str, Any] | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool as declared to the model: name, description and JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class Tool(ABC, Generic[P]):
    """One capability the model can call.

    Subclasses set `name`, `description`, `parameters` (a pydantic model, ideally a
    `ToolParams`) and optionally `timeout` (seconds), and implement `run`. `run` returns plain
    text for the model (or a `ToolOutcome`: that text and a structured result, JSON data kept
    with the run, never sent to the model); it raises `ToolError` for failures the model
    should read (bad path, missing file, ...). Any other exception is reported to the model
    as a tool failure.
    """

    name: str
    description: str
    parameters: type[P]
    timeout: float = 30.0
    # Whether the tool acts on the world beyond the workspace; approval policies read it.
    risky: bool = False
    # Whether its result carries text the agent did not write (a page, a file, a server's
    # answer): the agent marks such results as untrusted data (`harness.agent.untrusted`).
    outside_content: bool = False

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema given to the model; by default generated from `parameters`, once
        per parameter model (pydantic regenerates it on every call); each call returns a
        fresh copy the caller may change."""
        schema: dict[str, Any] = json.loads(_schema_json(self.parameters))
        return schema

    def timeout_for(self, params: P) -> float:
        """Return the seconds the registry lets this call run; override when a parameter sets it."""
        return self.timeout

    @abstractmethod
    def run(self, params: P, ctx: ToolContext) -> str | ToolOutcome:
        """Do the work and return text for the model (or a `ToolOutcome`: the text and a
        structured result). Must honour `ctx.cancel` if it can block."""


@functools.lru_cache(maxsize=512)
def _schema_json(parameters: type[BaseModel]) -> str:
    """`parameters`' JSON Schema as JSON text, generated once per model class."""
    return json.dumps(parameters.model_json_schema())


class ToolSource(Protocol):
    """Tools that come and go at run time (MCP servers). `tools` must not raise."""

    def tools(self) -> list[Tool[Any]]:
        """The tools available now."""
        ...


class ToolRegistry:
    """The tools one agent may call, by name. Not thread-safe for `register`; `execute` is.
    Attached sources add their tools after the registered ones; a registered name wins."""

    def __init__(self, tools: list[Tool[Any]] | None = None) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._sources: list[ToolSource] = []
        for tool in tools or []:
            self.register(tool)

    def attach(self, source: ToolSource) -> None:
        """Offer `source`'s tools too, asked afresh at every `specs()` and `execute()`."""
        self._sources.append(source)

    def offered(self) -> list[Tool[Any]]:
        """Every tool offered now, the registered ones first (`specs`' order)."""
        return list(self._all().values())

    def _all(self) -> dict[str, Tool[Any]]:
        tools = dict(self._tools)
        for source in self._sources:
            for tool in source.tools():
                if _NAME.match(tool.name):
                    tools.setdefault(tool.name, tool)
        return tools

    def register(self, tool: Tool[Any]) -> None:
        """Add `tool`. Raises ValueError if its name is taken or not `[A-Za-z0-9_-]{1,64}`."""
        if not _NAME.match(tool.name):
            raise ValueError(f"tool name {tool.name!r} must match {_NAME.pattern}")
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def replace(self, tool: Tool[Any]) -> None:
        """Put `tool` in place of the registered tool of the same name (to wrap it). Raises
        KeyError when no tool has that name."""
        if tool.name not in self._tools:
            raise KeyError(tool.name)
        self._tools[tool.name] = tool

    def narrowed(self, names: Iterable[str]) -> ToolRegistry:
        """A registry offering only the tools of this one named in `names` (those of attached
        sources too, asked afresh each time). Names this registry lacks are ignored: a
        narrowed registry never offers more than its parent."""
        allowed = frozenset(names)
        narrowed = ToolRegistry([t for n, t in self._tools.items() if n in allowed])
        for source in self._sources:
            narrowed.attach(_OnlyNamed(source, allowed))
        return narrowed

    def get(self, name: str) -> Tool[Any] | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Return the tool names in registration order, then those of attached sources."""
        return list(self._all())

    def is_risky(self, name: str) -> bool:
        """True when the tool called `name` declares itself `risky`; False for unknown names."""
        tool = self._all().get(name) if self._sources else self._tools.get(name)
        return bool(tool is not None and tool.risky)

    def carries_outside_content(self, name: str) -> bool:
        """True when the tool called `name` declares `outside_content`; False for unknown
        names."""
        tool = self._all().get(name) if self._sources else self._tools.get(name)
        return bool(tool is not None and tool.outside_content)

    def specs(self) -> list[ToolSpec]:
        """Return every tool's declaration, its schema generated from its parameter model."""
        return [
            ToolSpec(tool.name, tool.description, tool.json_schema())
            for tool in self._all().values()
        ]

    def execute(
        self, name: str, raw_arguments: Mapping[str, Any] | str, ctx: ToolContext
    ) -> ToolOutcome:
        """Run one tool call and return its outcome. Never raises for a bad call.

        Unknown tool, non-JSON or invalid arguments, a tool exception, a timeout and a
        cancellation each give an error outcome whose text tells the model what went wrong.
        `raw_arguments` is the model's arguments as a mapping or as a JSON text. Registered
        secrets are masked in the outcome (see the module docstring).
        """
        tools = self._all() if self._sources else self._tools
        tool = tools.get(name)
        if tool is None:
            available = ", ".join(tools) or "none"
            return ToolOutcome(f"unknown tool {name!r}; available tools: {available}", True)
        try:
            arguments = _parse_arguments(raw_arguments)
            params = tool.parameters.model_validate(arguments)
        except ToolError as exc:
            return ToolOutcome(f"invalid arguments for tool {name!r}: {exc}", True)
        except ValidationError as exc:
            return ToolOutcome(f"invalid arguments for tool {name!r}:\n{_describe(exc)}", True)
        if ctx.cancelled():
            return ToolOutcome(f"tool {name!r} was not run: the run was cancelled", True)
        outcome = _run_with_timeout(tool, params, ctx)
        structured = None
        if outcome.structured is not None:
            structured = map_json_strings(outcome.structured, redact_registered)
        return ToolOutcome(redact_registered(outcome.content), outcome.is_error, structured)


class _OnlyNamed:
    """A tool source narrowed to some names (`ToolRegistry.narrowed`)."""

    def __init__(self, source: ToolSource, allowed: frozenset[str]) -> None:
        self._source, self._allowed = source, allowed

    def tools(self) -> list[Tool[Any]]:
        return [t for t in self._source.tools() if t.name in self._allowed]


def _parse_arguments(raw: Mapping[str, Any] | str) -> Mapping[str, Any]:
    if not isinstance(raw, str):
        return raw
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments are not valid JSON ({exc}); send a JSON object") from exc
    if not isinstance(value, dict):
        raise ToolError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def _describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        line = f"- {location}: {error['msg']}"
        if error["type"] not in ("missing", "extra_forbidden"):
            line += f" (got {_short(error['input'])})"
        lines.append(line)
    return "\n".join(lines)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _run_with_timeout(tool: Tool[Any], params: BaseModel, ctx: ToolContext) -> ToolOutcome:
    stop = threading.Event()
    call_ctx = dataclasses.replace(ctx, cancel=stop)
    results: list[ToolOutcome] = []

    def target() -> None:
        results.append(_run_guarded(tool, params, call_ctx))

    timeout = tool.timeout_for(params)
    context = contextvars.copy_context()
    # A daemon thread so that a tool stuck past its timeout cannot block interpreter exit.
    worker = threading.Thread(
        target=context.run, args=(target,), name=f"tool-{tool.name}", daemon=True
    )
    deadline = time.monotonic() + timeout
    cancelled = False
    worker.start()
    while True:
        worker.join(_POLL_SECONDS)
        if not worker.is_alive():
            if not results:  # only a BaseException (SystemExit, ...) escapes _run_guarded
                return ToolOutcome(f"tool {tool.name!r} stopped without a result", True)
            return results[0]
        if not cancelled and ctx.cancelled():
            # Give the tool a moment to stop its work (bash kills its processes) before leaving.
            cancelled = True
            stop.set()
            deadline = min(deadline, time.monotonic() + _CANCEL_GRACE_SECONDS)
        if time.monotonic() >= deadline:
            stop.set()
            if cancelled:
                return ToolOutcome(f"tool {tool.name!r} was cancelled", True)
            logger.warning("tool %s timed out after %s s", tool.name, timeout)
            return ToolOutcome(
                f"tool {tool.name!r} timed out after {timeout:g} s and was stopped", True
            )


def _run_guarded(tool: Tool[Any], params: BaseModel, ctx: ToolContext) -> ToolOutcome:
    try:
        content = tool.run(params, ctx)
    except ToolError as exc:
        return ToolOutcome(str(exc), True)
    except Exception as exc:
        logger.warning("tool %s raised", tool.name, exc_info=True)
        return ToolOutcome(f"tool {tool.name!r} failed: {type(exc).__name__}: {exc}", True)
    if isinstance(content, ToolOutcome) and isinstance(content.content, str):
        return ToolOutcome(content.content, content.is_error, _json_object(tool, content))
    if not isinstance(content, str):
        return ToolOutcome(
            f"tool {tool.name!r} returned {type(content).__name__}, expected text", True
        )
    return ToolOutcome(content)


def _json_object(tool: Tool[Any], outcome: ToolOutcome) -> dict[str, Any] | None:
    """The outcome's structured result when it is a JSON object (a copy, so the tool cannot
    change it later); else None, with a warning (the text still reaches the model)."""
    if outcome.structured is None:
        return None
    try:
        if not isinstance(outcome.structured, dict):
            raise TypeError(f"a {type(outcome.structured).__name__}, not a dict")
        copied: dict[str, Any] = json.loads(json.dumps(outcome.structured, allow_nan=False))
    except (TypeError, ValueError) as exc:
        logger.warning("tool %s: structured result dropped: %s", tool.name, exc)
        return None
    return copied
