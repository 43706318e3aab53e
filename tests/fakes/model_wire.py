"""The wire side of the scripted model server: how the Anthropic Messages API and OpenAI
Chat Completions render a scripted `Reply` (JSON bodies, SSE frames, error bodies), and which
conversations they reject as malformed, as strictly as the real services do.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.model_server import ModelServer, Reply

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
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


def error_body(
    api: str,
    status: int,
    message: str | None,
    kind: str | None,
    code: str | None,
    *,
    overflow: bool = False,
) -> dict[str, Any]:
    """The provider's error body for `status`; unset fields take the provider's defaults."""
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


def anthropic_json(reply: Reply, model: str, fake: ModelServer) -> dict[str, Any]:
    """`reply` as a non-streamed Messages API response."""
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


def anthropic_events(
    reply: Reply, model: str, body: dict[str, Any], fake: ModelServer
) -> Iterator[bytes]:
    """`reply` as Messages API SSE frames, `message_start` to `message_stop`."""
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
        error = error_body("anthropic", reply.status, reply.error_message, reply.error_type, None)
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


def openai_json(reply: Reply, model: str, fake: ModelServer) -> dict[str, Any]:
    """`reply` as a non-streamed chat completion."""
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


def openai_events(
    reply: Reply, model: str, body: dict[str, Any], fake: ModelServer
) -> Iterator[bytes]:
    """`reply` as chat completion chunks, ending with `data: [DONE]`."""
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
        error = error_body(
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


def recorded_events(frames: tuple[dict[str, Any], ...]) -> Iterator[bytes]:
    """Recorded chat completion chunks, verbatim, then `data: [DONE]`."""
    for frame in frames:
        yield _data(frame)
    yield b"data: [DONE]\n\n"


# -- conversation checks, as strict as the real services --------------------------------


def request_problem(api: str, body: Any, headers: dict[str, str], fake: ModelServer) -> str | None:
    """Why the real service would answer 400 to this request, or None if it would not."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if api == "anthropic":
        if "anthropic-version" not in headers:
            return "anthropic-version: header is required"
        return _tool_choice_problem(api, body) or _anthropic_problem(body, fake)
    return _tool_choice_problem(api, body) or _openai_problem(body)


def _tool_choice_problem(api: str, body: dict[str, Any]) -> str | None:
    """What the service says about a malformed `tool_choice`: the wrong shape for its API, a
    forced call without tools, or a named tool that is not offered."""
    if "tool_choice" not in body:
        return None
    choice, tools = body["tool_choice"], body.get("tools") or []
    if api == "anthropic":
        names = [tool.get("name") for tool in tools]
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in ("auto", "any", "tool", "none"):
            return "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"
        forced = kind in ("any", "tool")
        named = choice.get("name") if kind == "tool" else None
    else:
        names = [(tool.get("function") or {}).get("name") for tool in tools]
        if not tools:
            return (
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
                "are specified."
            )
        if isinstance(choice, dict) and choice.get("type") == "function":
            forced, named = True, (choice.get("function") or {}).get("name")
        elif choice in ("auto", "required", "none"):
            forced, named = choice == "required", None
        else:
            return (
                "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or a "
                "named function."
            )
    if forced and not tools:
        return "tool_choice: a forced tool call needs tools"
    if named is not None and named not in names:
        return f"Tool '{named}' in tool_choice is not among the tools provided"
    return None


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


def _image_problem(block: dict[str, Any], role: str) -> str | None:
    """What the Messages API would say about an image block, or None."""
    source = block.get("source") or {}
    if role != "user":
        return "image blocks are only allowed in user turns"
    if source.get("type") != "base64" or source.get("media_type") not in IMAGE_TYPES:
        return "image source must be base64 with media_type image/jpeg, png, gif or webp"
    try:
        base64.b64decode(str(source.get("data", "")), validate=True)
    except ValueError:
        return "image source data is not valid base64"
    return None


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
            if kind == "image":
                problem = _image_problem(block, role)
                if problem is not None:
                    return f"messages.{i}.content.{j}: {problem}"
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
