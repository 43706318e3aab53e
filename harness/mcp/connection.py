"""One MCP server, reached through the official `mcp` SDK: the only module that touches it.

The SDK is async; the agent's tools are called from worker threads. So each connection owns
an event loop in a daemon thread, and a long-lived task there holds the SDK `Client` open
(for stdio, that is the server's process). The public methods are synchronous and
thread-safe, and translate every SDK, transport and process failure into `McpServerError`.

Lifecycle: nothing starts until the first `tools()` or `call()` (lazy start in the worker).
When the server dies, or fails to start, the connection is `failed` and the next use after
a backoff (1 s, doubling, at most 60 s) starts it again; uses before then fail at once with
the reason and the wait, so a broken server costs the model one readable error per call.
`close()` leaves the client (for stdio: stdin closed, the process tree terminated and
reaped by the SDK) and waits for that before stopping the loop.

Tool list changes: a server that announces `notifications/tools/list_changed` (as a plain
notification on handshake-era connections, or on a `subscriptions/listen` stream on
2026-07-28 ones) marks the list stale, and the next `tools()` lists it again.

The SDK (`mcp`, `mcp_types`: over half a second) is imported by the methods that start or
read a server, not with this module: `harness doctor`, `harness agents` and a worker with no
MCP server configured never load it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

import httpx2

from harness.mcp.config import ServerConfig

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import IncomingMessage
    from mcp_types import CallToolResult

logger = logging.getLogger(__name__)
THREAD_PREFIX = "mcp-"  # each connection's event-loop thread is named this plus the server's


class _QuietMcpRequests(logging.Filter):
    """Drops httpx2's records below WARNING that an MCP connection's own thread emits.

    httpx2 logs every request at INFO with its full URL, which may carry a key in its query
    string, once per MCP message: only its warnings are worth a line. httpx2 is the one HTTP
    stack of the whole process (the channels' requests go through it too, redacted), so the
    filter keys on the thread rather than quieting the logger for everyone.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not (record.threadName or "").startswith(
            THREAD_PREFIX
        )


_QUIET = _QuietMcpRequests()
logging.getLogger("httpx2").addFilter(_QUIET)  # idempotent: a filter is added once

T = TypeVar("T")
START_TIMEOUT = 20.0
CLOSE_TIMEOUT = 8.0
"""How long `close()` waits for the client to leave: the SDK gives a stdio server 2 s after
stdin closes, then terminates its process tree and waits for that too."""
LIST_PAGES = 20
_BACKOFF_FIRST, _BACKOFF_MAX = 1.0, 60.0
State = Literal["idle", "starting", "running", "failed"]


class McpServerError(Exception):
    """A server could not be reached, died, timed out or broke the protocol. Its text is
    written for the model to read."""


@dataclass(frozen=True)
class RemoteTool:
    """A tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class CallResult:
    """A tool's answer as text; `is_error` when the server said the call failed;
    `structured`, the `structuredContent` it sent beside the text, if any."""

    text: str
    is_error: bool
    structured: dict[str, Any] | None = None


class ServerConnection:
    """A lazily started, self-restarting connection to one configured server. `clock` (seconds,
    monotonic) times the restart backoff; tests pass one they can move forward."""

    def __init__(self, config: ServerConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._state: State = "failed" if config.problem else "idle"
        self._reason = config.problem or ""
        self._failures = 0
        self._retry_at = 0.0
        self._tools: list[RemoteTool] = []
        self._client: Client | None = None
        self._stale = False
        self._closed = False
        self._serving: Future[None] | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._errlog: TextIO | None = None

    @property
    def state(self) -> State:
        """`idle` (never used), `starting`, `running` or `failed`."""
        return self._state

    @property
    def reason(self) -> str:
        """Why the server is `failed`; empty otherwise."""
        return self._reason

    def tools(self) -> list[RemoteTool]:
        """The server's tools, starting it if needed, listed again when the server said its
        list changed; the last known list when it is down. Never raises."""
        with suppress(McpServerError):
            self._ensure_running()
            self._refresh_if_stale()
        return list(self._tools)

    def call(self, name: str, arguments: dict[str, Any], timeout: float) -> CallResult:
        """Call tool `name`. Raises `McpServerError` if the server is down, dies during the
        call or does not answer within `timeout` seconds."""
        self._ensure_running()
        client = self._client
        if client is None:
            raise McpServerError(f"MCP server {self.config.name!r} is not running")
        try:
            result = self._run(_call(client, name, arguments, timeout), timeout + 1.0)
        except McpServerError as exc:
            if "timed out" not in str(exc):
                self._failed(str(exc))
            raise
        return CallResult(_text(result), bool(result.is_error), result.structured_content)

    def close(self) -> None:
        """Stop the server and the loop thread, waiting (up to `CLOSE_TIMEOUT`) until the
        client has left, so a stdio server's process is gone and reaped. Idempotent; never
        raises."""
        with self._lock:
            self._closed = True
            serving, self._serving = self._serving, None
            self._stop_server()
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
            if not self.config.problem:
                self._state, self._reason = "failed", "shut down"
        if serving is not None:
            with suppress(Exception):
                serving.result(CLOSE_TIMEOUT)
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5.0)
            if not thread.is_alive():
                loop.close()
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    # -- lifecycle -------------------------------------------------------------------

    def _ensure_running(self) -> None:
        with self._lock:
            if self.config.problem:
                raise McpServerError(
                    f"MCP server {self.config.name!r} is not usable: {self.config.problem}"
                )
            if self._closed:
                raise McpServerError(f"MCP server {self.config.name!r} was shut down")
            if self._state == "running":
                return
            wait = self._retry_at - self._clock()
            if self._state == "failed" and wait > 0:
                raise McpServerError(
                    f"MCP server {self.config.name!r} is down ({self._reason}); "
                    f"next restart in {wait:.0f} s"
                )
            self._start()

    def _start(self) -> None:
        """Start the server and list its tools; called with the lock held."""
        self._stop_server()
        if self._loop is None or self._thread is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever,
                name=f"{THREAD_PREFIX}{self.config.name}",
                daemon=True,
            )
            self._thread.start()
        if not self.config.url and self._errlog is None:
            self._errlog = open(os.devnull, "w")  # the stdio server's stderr; closed by close()
        self._state, self._stale = "starting", False
        ready: Future[list[RemoteTool]] = Future()
        self._serving = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            self._tools = ready.result(START_TIMEOUT)
        except FutureTimeout:
            self._record_failure(f"did not start within {START_TIMEOUT:g} s")
            self._stop_server()
            raise McpServerError(f"MCP server {self.config.name!r} {self._reason}") from None
        except Exception as exc:
            self._record_failure(_describe(exc))
            raise McpServerError(
                f"MCP server {self.config.name!r} failed to start: {self._reason}"
            ) from exc
        self._state, self._reason, self._failures = "running", "", 0
        logger.info("MCP server %s running with %d tools", self.config.name, len(self._tools))

    async def _serve(self, ready: Future[list[RemoteTool]]) -> None:
        """Hold the client open until stopped or the server dies."""
        from mcp import Client

        stop = asyncio.Event()
        self._stop = stop
        own: Client | None = None
        try:
            async with (
                self._transport() as transport,
                Client(transport, message_handler=self._on_message) as client,
            ):
                tools = await _list(client)
                self._client = own = client
                watcher = self._watch(client)
                ready.set_result(tools)
                try:
                    await stop.wait()
                finally:
                    if watcher is not None:
                        watcher.cancel()
                        await asyncio.gather(watcher, return_exceptions=True)
        except BaseException as exc:  # the SDK raises exception groups from its task groups
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            elif not stop.is_set():
                self._failed(_describe(exc))
            if not isinstance(exc, Exception):
                raise
        finally:
            if self._client is own:  # a fast restart may have set its own client already
                self._client = None
            if not stop.is_set() and ready.done() and ready.exception() is None:
                self._failed("the server closed the connection")

    async def _on_message(self, message: IncomingMessage) -> None:
        """The SDK's message handler: a handshake-era list change arrives here."""
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._stale = True

    def _watch(self, client: Client) -> asyncio.Task[None] | None:
        """On a 2026-07-28 connection to a server that announces list changes, listen for
        them (that protocol sends them only on a `subscriptions/listen` stream)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
            tools and tools.list_changed
        ):
            return None

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _ in subscription:
                        self._stale = True
            except Exception as exc:  # a lost stream only costs the change notifications
                logger.info("MCP server %s: no tool list changes (%s)", self.config.name, exc)

        return asyncio.create_task(listen())

    def _refresh_if_stale(self) -> None:
        client = self._client
        if not self._stale or client is None:
            return
        self._stale = False
        try:
            tools = self._run(_list(client), self.config.timeout)
        except McpServerError as exc:
            self._stale = True
            logger.warning("MCP server %s: could not list tools again: %s", self.config.name, exc)
            return
        self._tools = tools
        logger.info("MCP server %s: tool list changed, %d tools", self.config.name, len(tools))

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        """The SDK transport to hand to its `Client`. For HTTP, this owns the `httpx2` client
        and closes it on leaving: the SDK closes only a client it made itself, so without this
        its pooled keep-alive connections stayed open until the garbage collector found them."""
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        if config.url:
            async with httpx2.AsyncClient(headers=config.headers, timeout=config.timeout) as http:
                yield streamable_http_client(config.url, http_client=http)
            return
        params = StdioServerParameters(
            command=config.command or "", args=list(config.args), env=config.env
        )
        assert self._errlog is not None, "`_start` opens it before serving a stdio server"
        yield stdio_client(params, errlog=self._errlog)

    def _failed(self, reason: str) -> None:
        with self._lock:
            if self._state == "running" and not self._closed:
                self._record_failure(reason)
                logger.warning("MCP server %s failed: %s", self.config.name, reason)

    def _record_failure(self, reason: str) -> None:
        self._state, self._reason = "failed", reason
        self._failures += 1
        delay = min(_BACKOFF_FIRST * 2 ** (self._failures - 1), _BACKOFF_MAX)
        self._retry_at = self._clock() + delay

    def _stop_server(self) -> None:
        stop, self._stop = self._stop, None
        if stop is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(stop.set)

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        if self._loop is None:
            coroutine.close()
            raise McpServerError(f"MCP server {self.config.name!r} is not running")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()
            raise McpServerError(
                f"MCP server {self.config.name!r} timed out: no answer within {timeout - 1:g} s"
            ) from None
        except Exception as exc:
            raise McpServerError(f"MCP server {self.config.name!r}: {_describe(exc)}") from exc


async def _list(client: Client) -> list[RemoteTool]:
    """Every page of the server's tool list (at most `LIST_PAGES`)."""
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(
            RemoteTool(t.name, t.description or "", dict(t.input_schema)) for t in page.tools
        )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


async def _call(
    client: Client, name: str, arguments: dict[str, Any], seconds: float
) -> CallToolResult:
    result = await client.call_tool(name, arguments, read_timeout_seconds=seconds)
    # a list change the server announced during the call is delivered by other tasks of
    # this loop: let them run before the caller (the agent) asks for the tools again
    for _ in range(3):
        await asyncio.sleep(0)
    return result


def _describe(exc: BaseException) -> str:
    """A one-line reason, looking inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    if "timed out" in text.lower() or isinstance(exc, TimeoutError):
        return f"timed out ({text})"
    return f"{type(exc).__name__}: {text}"


def _text(result: CallToolResult) -> str:
    """The result's content as text: text blocks as they are, other blocks named."""
    from mcp_types import TextContent

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content omitted]")
    if not parts and result.structured_content is not None:
        parts.append(str(result.structured_content))
    return "\n".join(parts)
