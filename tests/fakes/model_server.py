"""A scripted model server: a real HTTP server on 127.0.0.1 speaking the Anthropic Messages
API (`POST /v1/messages`) and OpenAI Chat Completions (`POST /v1/chat/completions`), streaming
and not, with the providers' error bodies; also OpenAI's embeddings (`POST /v1/embeddings`,
deterministic vectors from `embeddings_wire`, recorded with api "embeddings"; set
`embeddings_status` to answer every one with that error) and transcriptions.

A test scripts the replies (`server.script(Reply.answer("hi"), Reply.error(429))`), points a
client at `server.url` (Anthropic) or `server.openai_url`, and reads `server.requests` to see
what was sent. Like the real services it answers 401 without the right key and 400 for
malformed conversations (checked in `model_wire`, which also renders the replies); those
rejections do not consume a scripted reply and are listed in `server.rejections`. A request
with nothing scripted gets a 500 and is counted in `server.unscripted`, unless a responder is
set (`server.respond_with(fn)`): then `fn(api, body)` builds the reply from the request, which
lets many concurrent conversations each get an answer of their own (the chaos suite).
Replies scripted for one conversation (`server.script_for(opened_with("find tea"), ...)`, see
`model_match`) go only to its requests, whatever order concurrent conversations ask in.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.embeddings_wire import embeddings_reply
from tests.fakes.model_match import Match
from tests.fakes.model_wire import (
    anthropic_events,
    anthropic_json,
    error_body,
    openai_events,
    openai_json,
    recorded_events,
    request_problem,
)
from tests.fakes.prompt_cache import PromptCache


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call the scripted model makes. `id` defaults to a fresh provider-style id."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the class methods.

    `delay` stalls the answer after its first streamed event (or before a JSON body) for that
    many seconds, or until the server stops. `chunk` is how many characters of text or tool
    arguments go in one streamed delta. `pace` waits that many seconds after every streamed
    event, like a model that writes slowly. `truncated` ends the turn as cut off by max_tokens;
    `disconnect` drops the connection after three streamed events (`cut_after`: after that
    many). `thinking` (Anthropic
    only) adds a signed thinking block before the content, which the server then expects
    back, unchanged, at the start of the assistant message in the next request.
    """

    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    thinking: str | None = None
    truncated: bool = False
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    overflow: bool = False
    mid_stream: bool = False
    disconnect: bool = False
    cut_after: int = 0
    retry_after: float | None = None
    delay: float = 0.0
    pace: float = 0.0
    chunk: int = 7
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    frames: tuple[dict[str, Any], ...] | None = None
    raw: tuple[bytes, ...] | None = None

    @classmethod
    def sse(cls, *pieces: bytes, **options: Any) -> Reply:
        """Either API: stream these bytes verbatim, each piece written and flushed on its own
        (with `pace=` between them, so that an event split over two pieces arrives in two
        reads): comments, pings, odd line ends or broken events, as a client must take them."""
        return cls(raw=pieces, **options)

    @classmethod
    def recorded(cls, *frames: dict[str, Any]) -> Reply:
        """OpenAI only: stream these chunk bodies verbatim, then `data: [DONE]` (for the
        shapes local servers send, see `tests.fakes.compat_chunks`)."""
        return cls(frames=frames)

    @classmethod
    def answer(cls, text: str, **options: Any) -> Reply:
        """The model answers `text` and stops."""
        return cls(text=text, **options)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> Reply:
        """The model calls one tool (pass `text=` for words before the call)."""
        return cls(tool_calls=(ScriptedCall(name, arguments or {}),), **options)

    @classmethod
    def tools(cls, *calls: ScriptedCall, **options: Any) -> Reply:
        """The model calls several tools in one turn."""
        return cls(tool_calls=calls, **options)

    @classmethod
    def error(cls, status: int, message: str | None = None, **options: Any) -> Reply:
        """An error answer with the provider's error body for `status` (e.g. 429, 500, 529).
        `mid_stream=True` sends it as an event after the stream has started."""
        return cls(status=status, error_message=message, **options)

    @classmethod
    def context_overflow(cls, message: str | None = None) -> Reply:
        """The provider's 'prompt is too long' / `context_length_exceeded` 400."""
        return cls(status=400, overflow=True, error_message=message)


Responder = Callable[[str, Any], "Reply"]
"""Builds a reply from a request: `(api, parsed body) -> Reply` (see `respond_with`)."""


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server received it."""

    api: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any


class ModelServer:
    """The server. Use as a context manager or call `start()` / `stop()`. Thread-safe."""

    def __init__(
        self,
        api_key: str = "test-key",
        *,
        unknown_fields: frozenset[str] = frozenset(),
        prompt_cache: bool = False,
    ) -> None:
        self.api_key = api_key
        # With a prompt cache, replies report input and cache tokens computed from the
        # request, as the real services do, instead of their scripted counts.
        self.prompt_cache = PromptCache() if prompt_cache else None
        # Request fields this server answers 400 to, as a strict local server does.
        self.unknown_fields = unknown_fields
        self._lock = threading.Condition()
        self._replies: deque[Reply] = deque()
        self._keyed: list[tuple[Match, deque[Reply]]] = []
        self._requests: list[RecordedRequest] = []
        self._stalled = 0
        self._stalling = 0
        self.rejections: list[str] = []
        self.transcript = "Remind me to buy milk on the way home."
        self.synonyms: dict[str, str] = {}  # word -> word it embeds as
        self.embeddings_status = 200
        self.unscripted = 0
        self.busy_seconds = 0.0
        self.answer_seconds: list[float] = []  # each request's share of busy_seconds
        self.stopping = threading.Event()
        self.thinking_tool_ids: dict[str, str] = {}  # tool_use id -> model that thought
        self._ids = itertools.count(1)
        self._responder: Responder | None = None
        self._http = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.01}, name="model-server"
        )

    @property
    def url(self) -> str:
        """Base URL for the Anthropic SDK (`http://127.0.0.1:PORT`)."""
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def openai_url(self) -> str:
        """Base URL for the OpenAI SDK (`http://127.0.0.1:PORT/v1`)."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def script(self, *replies: Reply) -> None:
        """Queue replies; each model request takes the oldest."""
        with self._lock:
            self._replies.extend(replies)

    def script_for(self, match: Match, *replies: Reply) -> None:
        """Queue replies that only requests `match(api, body)` accepts take, oldest first,
        before the shared queue of `script`: one conversation's answers, when concurrent
        conversations may ask in either order. A request two queues match takes from the
        one scripted first."""
        with self._lock:
            self._keyed.append((match, deque(replies)))

    def respond_with(self, responder: Responder | None) -> None:
        """Answer requests that find no scripted reply with `responder(api, body)`, where
        `api` is "anthropic" or "openai" and `body` the parsed request; None stops that."""
        with self._lock:
            self._responder = responder

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until at least `count` requests arrived; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    def wait_until_stalled(self, timeout: float = 10.0) -> bool:
        """Block until a reply with a `delay` has started stalling; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._stalled > 0, timeout)

    def stalling(self) -> int:
        """Replies stalling now, inside their `delay`: the model calls in flight."""
        with self._lock:
            return self._stalling

    def start(self) -> ModelServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Wake stalled replies, stop serving and wait for handler threads. Idempotent."""
        self.stopping.set()
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join()
        self._http.server_close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- used by the handler ------------------------------------------------------------

    def add_busy(self, seconds: float) -> None:
        """Count `seconds` of one request's handling in `busy_seconds`: the model's own time at
        the wire, from the request's first byte read to the last byte of its answer written;
        also noted on its own in `answer_seconds`."""
        with self._lock:
            self.busy_seconds += seconds
            self.answer_seconds.append(seconds)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    def next_reply(self, api: str = "anthropic", body: Any = None) -> Reply | None:
        with self._lock:
            for match, queue in self._keyed:
                if queue and match(api, body):
                    return queue.popleft()
            if self._replies:
                return self._replies.popleft()
            responder = self._responder
            if responder is None:
                self.unscripted += 1
                return None
        return responder(api, body)

    def reject(self, problem: str) -> None:
        with self._lock:
            self.rejections.append(problem)

    def stall(self, seconds: float) -> None:
        with self._lock:
            self._stalled += 1
            self._stalling += 1
            self._lock.notify_all()
        try:
            self.stopping.wait(seconds)
        finally:
            with self._lock:
                self._stalling -= 1

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}{next(self._ids):06d}"

    @staticmethod
    def sign(model: str, thinking: str) -> str:
        """The signature the server puts on (and expects back with) a thinking block."""
        return hashlib.sha256(f"{model}\0{thinking}".encode()).hexdigest()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    request_queue_size = 1024  # hundreds of calls at once must not overflow the accept queue

    def __init__(self, model_server: ModelServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model_server = model_server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `server.requests` instead."""

    def do_POST(self) -> None:
        started = time.perf_counter()
        try:
            self._answer()
        finally:
            self.server.model_server.add_busy(time.perf_counter() - started)

    def _answer(self) -> None:
        fake = self.server.model_server
        api = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}.get(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/v1/audio/transcriptions":
            self._transcribe(fake, raw)
            return
        if self.path == "/v1/embeddings":
            self._embed(fake, raw)
            return
        if api is None:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake.record(RecordedRequest(api, self.path, headers, raw, body))
        if not _authorized(api, headers, fake.api_key):
            self._send_json(401, error_body(api, 401, None, None, None))
            return
        problem = request_problem(api, body, headers, fake) or _unknown_field(body, fake)
        if problem is not None:
            fake.reject(problem)
            self._send_json(400, error_body(api, 400, problem, None, None))
            return
        reply = fake.next_reply(api, body)
        if reply is None:
            message = "model server: no scripted reply left"
            self._send_json(500, error_body(api, 500, message, None, None))
            return
        if reply.status != 200 and not reply.mid_stream:
            self._send_error_reply(api, reply)
            return
        if fake.prompt_cache is not None:
            usage = fake.prompt_cache.usage(api, body)
            reply = dataclasses.replace(
                reply,
                input_tokens=usage.input_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
            )
        model = str(body.get("model", ""))
        render = anthropic_events if api == "anthropic" else openai_events
        if reply.raw is not None:
            self._stream(iter(reply.raw), reply)
        elif reply.frames is not None:
            self._stream(recorded_events(reply.frames), reply)
        elif body.get("stream"):
            self._stream(render(reply, model, body, fake), reply)
        else:
            if reply.delay:
                fake.stall(reply.delay)
            result = anthropic_json if api == "anthropic" else openai_json
            self._send_json(200, result(reply, model, fake))

    def _transcribe(self, fake: ModelServer, raw: bytes) -> None:
        """OpenAI's transcription endpoint: multipart with `file` and `model`; answers
        `{"text": fake.transcript}`."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake.record(RecordedRequest("transcription", self.path, headers, raw, None))
        if not _authorized("openai", headers, fake.api_key):
            self._send_json(401, error_body("openai", 401, None, None, None))
            return
        if b'name="file"' not in raw or b'name="model"' not in raw:
            self._send_json(
                400, error_body("openai", 400, "file and model are required", None, None)
            )
            return
        self._send_json(200, {"text": fake.transcript})

    def _embed(self, fake: ModelServer, raw: bytes) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        body = json.loads(raw or b"null")
        fake.record(RecordedRequest("embeddings", self.path, headers, raw, body))
        if not _authorized("openai", headers, fake.api_key):
            self._send_json(401, error_body("openai", 401, None, None, None))
        elif fake.embeddings_status != 200:
            status = fake.embeddings_status
            self._send_json(status, error_body("openai", status, None, None, None))
        else:
            self._send_json(*embeddings_reply(body, fake.synonyms))

    def _send_error_reply(self, api: str, reply: Reply) -> None:
        headers = {}
        if reply.retry_after is not None:
            headers["retry-after"] = str(reply.retry_after)
        body = error_body(
            api,
            reply.status,
            reply.error_message,
            reply.error_type,
            reply.error_code,
            overflow=reply.overflow,
        )
        self._send_json(reply.status, body, headers)

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        self._write(data)

    def _stream(self, frames: Iterator[bytes], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for i, frame in enumerate(frames):
            cut = 3 if reply.disconnect else reply.cut_after
            if (cut and i == cut) or not self._write(frame):
                return
            if i == 0 and reply.delay:
                self.server.model_server.stall(reply.delay)
            if reply.pace:
                self.server.model_server.stopping.wait(reply.pace)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True


def anthropic_tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of an Anthropic Messages request body, in order (none for a
    body without messages, such as a transcription's)."""
    return [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def _authorized(api: str, headers: dict[str, str], key: str) -> bool:
    # anthropic 2.x sends its key as a bearer token; older clients and curl use x-api-key
    if api == "anthropic" and headers.get("x-api-key") == key:
        return True
    return headers.get("authorization") == f"Bearer {key}"


def _unknown_field(body: Any, fake: ModelServer) -> str | None:
    for name in sorted(fake.unknown_fields & set(body)):
        return f"Unrecognized request argument supplied: {name}"
    return None
