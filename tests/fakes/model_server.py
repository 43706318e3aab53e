"""A scripted model server: a real HTTP server on 127.0.0.1 speaking the Anthropic Messages
API (`POST /v1/messages`) and OpenAI Chat Completions (`POST /v1/chat/completions`), streaming
and not, with the providers' error bodies.

A test scripts the replies (`server.script(Reply.answer("hi"), Reply.error(429))`), points a
client at `server.url` (Anthropic) or `server.openai_url`, and reads `server.requests` to see
what was sent. Like the real services it answers 401 without the right key and 400 for
malformed conversations (`_anthropic_problem`, `_openai_problem`); those rejections do not
consume a scripted reply and are listed in `server.rejections`. A request with nothing
scripted gets a 500 and is counted in `server.unscripted`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
    arguments go in one streamed delta. `truncated` ends the turn as cut off by max_tokens;
    `disconnect` drops the connection after three streamed events. `thinking` (Anthropic
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
    retry_after: float | None = None
    delay: float = 0.0
    chunk: int = 7
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

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

    def __init__(self, api_key: str = "test-key") -> None:
        self.api_key = api_key
        self._lock = threading.Condition()
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._stalled = 0
        self.rejections: list[str] = []
        self.unscripted = 0
        self.stopping = threading.Event()
        self.thinking_tool_ids: dict[str, str] = {}  # tool_use id -> model that thought
        self._ids = itertools.count(1)
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

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until at least `count` requests arrived; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    def wait_until_stalled(self, timeout: float = 10.0) -> bool:
        """Block until a reply with a `delay` has started stalling; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._stalled > 0, timeout)

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

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    def next_reply(self) -> Reply | None:
        with self._lock:
            if not self._replies:
                self.unscripted += 1
                return None
            return self._replies.popleft()

    def reject(self, problem: str) -> None:
        with self._lock:
            self.rejections.append(problem)

    def stall(self, seconds: float) -> None:
        with self._lock:
            self._stalled += 1
            self._lock.notify_all()
        self.stopping.wait(seconds)

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
        fake = self.server.model_server
        api = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}.get(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
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
            self._send_json(401, _error_body(api, 401, None, None, None))
            return
        problem = _problem(api, body, headers, fake)
        if problem is not None:
            fake.reject(problem)
            self._send_json(400, _error_body(api, 400, problem, None, None))
            return
        reply = fake.next_reply()
        if reply is None:
            message = "model server: no scripted reply left"
            self._send_json(500, _error_body(api, 500, message, None, None))
            return
        if reply.status != 200 and not reply.mid_stream:
            self._send_error_reply(api, reply)
            return
        model = str(body.get("model", ""))
        render = _anthropic_events if api == "anthropic" else _openai_events
        if body.get("stream"):
            self._stream(render(reply, model, body, fake), reply)
        else:
            if reply.delay:
                fake.stall(reply.delay)
            result = _anthropic_json if api == "anthropic" else _openai_json
            self._send_json(200, result(reply, model, fake))

    def _send_error_reply(self, api: str, reply: Reply) -> None:
        headers = {}
        if reply.retry_after is not None:
            headers["retry-after"] = str(reply.retry_after)
        body = _error_body(
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
            if (reply.disconnect and i == 3) or not self._write(frame):
                return
            if i == 0 and reply.delay:
                self.server.model_server.stall(reply.delay)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True


# -- wire formats ----------------------------------------------------------------------

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "your API key does not have permission to use this resource"),
    404: ("not_found_error", "model not found"),
    413: ("request_too_large", "request exceeds the maximum allowed number of bytes"),
    429: ("rate_limit_error", "number of request tokens has exceeded your rate limit"),
    500: ("api_error", "internal server error"),
    529: ("overloaded_error", "Overloaded"),
}
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", None, "you do not have access to this model"),
    404: ("invalid_request_error", "model_not_found", "the model does not exist"),
    429: ("requests", "rate_limit_exceeded", "rate limit reached for requests"),
    500: ("server_error", None, "the server had an error while processing your request"),
}


def _authorized(api: str, headers: dict[str, str], key: str) -> bool:
    # anthropic 2.x sends its key as a bearer token; older clients and curl use x-api-key
    if api == "anthropic" and headers.get("x-api-key") == key:
        return True
    return headers.get("authorization") == f"Bearer {key}"


def _error_body(
    api: str,
    status: int,
    message: str | None,
    kind: str | None,
    code: str | None,
    *,
    overflow: bool = False,
) -> dict[str, Any]:
    if api == "anthropic":
        if overflow:
            message = message or "prompt is too long: 210000 tokens > 200000 maximum"
        default_kind, default_message = _ANTHROPIC_ERRORS.get(
            status, ("api_error" if status >= 500 else "invalid_request_error", f"error {status}")
        )
        return {
            "type": "error",
            "error": {"type": kind or default_kind, "message": message or default_message},
            "request_id": "req_fake000001",
        }
    if overflow:
        code = code or "context_length_exceeded"
        message = message or (
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130000 tokens. Please reduce the length of the messages."
        )
    default_kind, default_code, default_message = _OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "error")
    )
    return {
        "error": {
            "message": message or default_message,
            "type": kind or default_kind,
            "param": None,
            "code": code or default_code,
        }
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(size, 1))]


def _cut(text: str, cut: bool) -> str:
    return text[: len(text) // 2] if cut else text


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _data(data: Any) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


def _anthropic_blocks(reply: Reply, model: str, fake: ModelServer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking is not None:
        signature = fake.sign(model, reply.thinking)
        blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": signature})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        call_id = call.id or fake.new_id("toolu_")
        if reply.thinking is not None:
            fake.thinking_tool_ids[call_id] = model
        blocks.append(
            {"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments}
        )
    return blocks


def _anthropic_usage(reply: Reply) -> dict[str, int]:
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cache_read_input_tokens": reply.cache_read_tokens,
        "cache_creation_input_tokens": reply.cache_write_tokens,
    }


def _anthropic_stop(reply: Reply) -> str:
    return "max_tokens" if reply.truncated else "tool_use" if reply.tool_calls else "end_turn"


def _anthropic_json(reply: Reply, model: str, fake: ModelServer) -> dict[str, Any]:
    return {
        "id": fake.new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(reply, model, fake),
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": _anthropic_usage(reply),
    }


def _anthropic_events(
    reply: Reply, model: str, body: dict[str, Any], fake: ModelServer
) -> Iterator[bytes]:
    message: dict[str, Any] = {
        "id": fake.new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**_anthropic_usage(reply), "output_tokens": 1},
    }
    yield _sse("message_start", {"type": "message_start", "message": message})
    yield _sse("ping", {"type": "ping"})
    if reply.mid_stream:
        error = _error_body("anthropic", reply.status, reply.error_message, reply.error_type, None)
        yield _sse("error", {"type": "error", "error": error["error"]})
        return
    blocks = _anthropic_blocks(reply, model, fake)
    for index, block in enumerate(blocks):
        cut = reply.truncated and index == len(blocks) - 1
        start, deltas = _block_deltas(block, reply.chunk, cut)
        event: dict[str, Any] = {"type": "content_block_start", "index": index}
        yield _sse("content_block_start", {**event, "content_block": start})
        for delta in deltas:
            event = {"type": "content_block_delta", "index": index, "delta": delta}
            yield _sse("content_block_delta", event)
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    delta = {"stop_reason": _anthropic_stop(reply), "stop_sequence": None}
    usage = {"output_tokens": reply.output_tokens}
    yield _sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    yield _sse("message_stop", {"type": "message_stop"})


def _block_deltas(
    block: dict[str, Any], size: int, cut: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A content block as its (empty) start and its deltas; `cut` breaks off a tool call's
    arguments halfway, as max_tokens does."""
    if block["type"] == "text":
        pieces = _pieces(block["text"], size)
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]
    if block["type"] == "thinking":
        pieces = _pieces(block["thinking"], size)
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas
    # tool_use: the first input_json_delta is empty, as the real API sends it
    pieces = ["", *_pieces(_cut(json.dumps(block["input"]), cut), size)]
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    return {**block, "input": {}}, deltas


def _openai_calls(reply: Reply, fake: ModelServer) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or fake.new_id("call_"),
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in reply.tool_calls
    ]


def _openai_usage(reply: Reply) -> dict[str, Any]:
    prompt = reply.input_tokens + reply.cache_read_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": reply.output_tokens,
        "total_tokens": prompt + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens, "audio_tokens": 0},
    }


def _openai_finish(reply: Reply) -> str:
    return "length" if reply.truncated else "tool_calls" if reply.tool_calls else "stop"


def _openai_json(reply: Reply, model: str, fake: ModelServer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = _openai_calls(reply, fake)
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": _openai_finish(reply),
    }
    return {
        "id": fake.new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [choice],
        "usage": _openai_usage(reply),
    }


def _openai_events(
    reply: Reply, model: str, body: dict[str, Any], fake: ModelServer
) -> Iterator[bytes]:
    chunk_id = fake.new_id("chatcmpl-")
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(choices: list[dict[str, Any]], usage: Any = None) -> bytes:
        data = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": choices,
        }
        if include_usage:
            data["usage"] = usage
        return _data(data)

    def delta(content: dict[str, Any], finish: str | None = None) -> bytes:
        return chunk([{"index": 0, "delta": content, "logprobs": None, "finish_reason": finish}])

    yield delta({"role": "assistant", "content": ""})
    if reply.mid_stream:
        error = _error_body(
            "openai", reply.status, reply.error_message, reply.error_type, reply.error_code
        )
        yield _data(error)
        return
    for piece in _pieces(reply.text, reply.chunk):
        yield delta({"content": piece})
    calls = _openai_calls(reply, fake)
    for index, call in enumerate(calls):
        first = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        yield delta({"tool_calls": [{"index": index, **first}]})
        arguments = _cut(call["function"]["arguments"], reply.truncated and call is calls[-1])
        for piece in _pieces(arguments, reply.chunk):
            yield delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield delta({}, _openai_finish(reply))
    if include_usage:
        yield chunk([], _openai_usage(reply))
    yield b"data: [DONE]\n\n"


# -- conversation checks, as strict as the real services --------------------------------


def _problem(api: str, body: Any, headers: dict[str, str], fake: ModelServer) -> str | None:
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if api == "anthropic":
        if "anthropic-version" not in headers:
            return "anthropic-version: header is required"
        return _anthropic_problem(body, fake)
    return _openai_problem(body)


def _anthropic_problem(body: dict[str, Any], fake: ModelServer) -> str | None:
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required"
    system = body.get("system", [])
    system = [{"type": "text", "text": system}] if isinstance(system, str) else system
    for i, block in enumerate(system):
        if block.get("type") != "text" or not str(block.get("text", "")).strip():
            return f"system.{i}: text content blocks must contain non-whitespace text"
    tools = body.get("tools", [])
    for i, tool in enumerate(tools):
        if not _TOOL_NAME.match(str(tool.get("name", ""))):
            return f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if (tool.get("input_schema") or {}).get("type") != "object":
            return f"tools.{i}.input_schema: input_schema must be a JSON Schema of type object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    contents = []
    for i, message in enumerate(messages):
        content = message.get("content")
        content = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not isinstance(content, list) or not content:
            return f"messages.{i}: all messages must have non-empty content"
        contents.append(content)
    blocks = [*system, *tools, *(block for content in contents for block in content)]
    marked = [block for block in blocks if block.get("cache_control")]
    if len(marked) > 4:
        return "A maximum of 4 blocks with cache_control may be provided."
    roles = [m["role"] for m in messages]
    return _anthropic_turns_problem(roles, contents, body["model"], fake)


def _anthropic_turns_problem(
    roles: list[str], contents: list[list[dict[str, Any]]], model: str, fake: ModelServer
) -> str | None:
    last_assistant = max((i for i, r in enumerate(roles) if r == "assistant"), default=-1)
    open_ids: set[str] = set()
    for i, (role, content) in enumerate(zip(roles, contents, strict=True)):
        for j, block in enumerate(content):
            kind = block.get("type")
            if kind == "text" and not str(block.get("text", "")).strip():
                return f"messages.{i}.content.{j}.text: text content blocks must be non-empty"
            if (kind, role) in (("tool_use", "user"), ("tool_result", "assistant")):
                return f"messages.{i}.content.{j}: {kind} blocks are not allowed in {role} turns"
            if kind == "thinking" and block.get("signature") != fake.sign(
                model, block.get("thinking", "")
            ):
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
        results = {b.get("tool_use_id") for b in content if b.get("type") == "tool_result"}
        if results - open_ids:
            return (
                f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{sorted(map(str, results - open_ids))[0]}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message."
            )
        if open_ids - results:
            return (
                f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(sorted(open_ids - results))}"
            )
        open_ids = {b["id"] for b in content if b.get("type") == "tool_use"}
        thought = {fake.thinking_tool_ids.get(tool_id) for tool_id in open_ids}
        needs_thinking = i == last_assistant and model in thought
        if needs_thinking and content[0].get("type") not in ("thinking", "redacted_thinking"):
            return (
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                f"found `{content[0].get('type')}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block."
            )
    if open_ids:
        return "`tool_use` ids were found without `tool_result` blocks immediately after"
    return None


def _openai_problem(body: dict[str, Any]) -> str | None:
    for i, tool in enumerate(body.get("tools", [])):
        name = str((tool.get("function") or {}).get("name", ""))
        if tool.get("type") != "function" or not _TOOL_NAME.match(name):
            return (
                f"Invalid 'tools[{i}].function.name': string does not match pattern. "
                "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
            )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1."
    open_ids: set[str] = set()
    answered: set[str] = set()
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role != "tool" and open_ids - answered:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(open_ids - answered))}"
            )
        if role in ("system", "developer", "user"):
            if not (isinstance(content, str) and content.strip()) and not (
                isinstance(content, list) and content
            ):
                return f"Invalid 'messages[{i}].content': string too short or empty."
            open_ids = set()
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls and not (isinstance(content, str) and content):
                return f"Invalid value for 'messages[{i}].content': expected a string, got null."
            for call in calls:
                function = call.get("function") or {}
                if not call.get("id") or not isinstance(function.get("arguments"), str):
                    return f"Missing required parameter: 'messages[{i}].tool_calls[0].id'."
            open_ids, answered = {c["id"] for c in calls}, set()
        elif role == "tool":
            if message.get("tool_call_id") not in open_ids:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            answered.add(message["tool_call_id"])
        else:
            return f"Invalid value: '{role}'. Supported values are: 'system', 'user', 'assistant'."
    if open_ids - answered:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'."
        )
    return None
