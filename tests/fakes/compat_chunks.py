"""Streamed tool-call chunks in the shapes OpenAI-compatible local servers send them.

We cannot reach Ollama, vLLM or llama.cpp's server from the tests, so each sequence below is
derived from the server's own source at a named commit: which chunks it writes for a tool call,
in which order, with which fields present, absent or null. Only the wire shapes are taken (no
code); ids and numbers are made up in each server's format. Each request streams with
`stream_options.include_usage`, as `harness.llm.openai` always asks.

`same_index_parallel_calls` and `no_index_fragments` are not attributed to a server: they are
the odd chunkings the provider must also survive (calls told apart only by id; no `index`).
"""

from __future__ import annotations

from typing import Any

_CREATED = 1_760_000_000


def _chunk(
    model: str, fingerprint: str | None, choices: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-local1",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": model,
        "choices": choices,
    }
    if fingerprint is not None:
        chunk["system_fingerprint"] = fingerprint
    return {**chunk, **extra}


def _choice(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish, **extra}


def ollama() -> tuple[dict[str, Any], ...]:
    """Ollama: `get_weather(city=Paris)`.

    Derived from github.com/ollama/ollama at fb30760996871fa9460115c753afd2c60d4ab0f7:
    `middleware/openai.go` (`ChatWriter.writeResponse`) and `openai/openai.go` (`toChunk`,
    `ToToolCalls`, `FinishChunk`, the `Delta`/`ToolCall` structs); ids from `toolCallId` in
    `server/routes.go`. The parser hands over a call whole, so it arrives in one chunk, with
    `index` (from the call's `Function.Index`), `content: ""` (a string is never omitted) and
    `role` (first chunk); the metrics-only trailer writes no chunk of its own; then a finish
    chunk with an empty delta and `tool_calls` (older releases said `stop`); then, for
    `include_usage`, the same chunk again with `choices: []` and the usage.
    """
    call = {
        "id": "call_k3x9q2m7",
        "index": 0,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
    model, fp = "llama3.1:8b", "fp_ollama"
    usage = {"prompt_tokens": 212, "completion_tokens": 18, "total_tokens": 230}
    return (
        _chunk(model, fp, [_choice({"role": "assistant", "content": "", "tool_calls": [call]})]),
        _chunk(model, fp, [_choice({}, "tool_calls")]),
        _chunk(model, fp, [], usage=usage),
    )


def ollama_2024() -> tuple[dict[str, Any], ...]:
    """Ollama as released in 2024: `get_weather(city=Paris)`.

    Derived from github.com/ollama/ollama at 39e29ae5ddb9ff710c0e28652b61850f458e1205
    (`openai/openai.go`: `toChunk`, `toToolCalls`, the `Message`/`ToolCall` structs), the
    parent of the commit that added `index` to tool calls. Every chunk repeats `role` and
    `content`; the call has no `index`; the finish reason rides on the last chunk and is
    `stop` although a tool was called; there is no usage chunk (`include_usage` is ignored).
    """
    call = {
        "id": "call_7hx2m4qa",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
    model, fp = "llama3.1:8b", "fp_ollama"
    return (
        _chunk(model, fp, [_choice({"role": "assistant", "content": "", "tool_calls": [call]})]),
        _chunk(model, fp, [_choice({"role": "assistant", "content": ""}, "stop")]),
    )


def vllm() -> tuple[dict[str, Any], ...]:
    """vLLM with `--tool-call-parser hermes`: `get_weather(city=Paris)`.

    Derived from github.com/vllm-project/vllm: `vllm/entrypoints/openai/serving_chat.py` at
    99c5632fc2d252a6f25afa76347df392eb898c42 (`chat_completion_stream_generator`) and
    `vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py` at
    836d1f31211015f62485b0151fbbf85b6cc7a934 (`extract_tool_calls_streaming`). Chunks are
    dumped with `exclude_unset`, so a field passed as None (`logprobs`, `finish_reason`,
    `token_ids`) is sent as null and one never set is absent: first a role chunk with
    `content: ""`; the name chunk has `id` (`chatcmpl-tool-<uuid>`), `type` and a function
    without `arguments`; argument fragments carry only `index`; the closing `"}` is its own
    fragment; the finish chunk has an empty delta, `tool_calls` and `stop_reason`; the usage
    chunk (dumped with `exclude_none`) has `choices: []` and no `prompt_tokens_details`.
    """
    model = "Qwen/Qwen2.5-7B-Instruct"

    def piece(delta: dict[str, Any]) -> dict[str, Any]:
        return _chunk(model, None, [_choice(delta, logprobs=None, token_ids=None)])

    name = {
        "index": 0,
        "type": "function",
        "id": "chatcmpl-tool-4e1f0c2b9a7d4c58b3a6e2f1d0c9b8a7",
        "function": {"name": "get_weather"},
    }
    fragments = ['{"city": "', "Par", "is", '"}']
    return (
        _chunk(model, None, [_choice({"role": "assistant", "content": ""}, logprobs=None)]),
        piece({"tool_calls": [name]}),
        *(piece({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments),
        _chunk(
            model,
            None,
            [_choice({}, "tool_calls", logprobs=None, stop_reason=None, token_ids=None)],
        ),
        _chunk(
            model,
            None,
            [],
            usage={"prompt_tokens": 305, "total_tokens": 329, "completion_tokens": 24},
        ),
    )


def llama_cpp() -> tuple[dict[str, Any], ...]:
    """llama.cpp's `llama-server`: two parallel calls, `get_weather(Paris)` and
    `get_weather(Rome)`.

    Derived from github.com/ggml-org/llama.cpp: `tools/server/server-task.cpp` at
    00efb3e184262872916bf136b3df63c1822a19bd (`server_task_result_cmpl_partial::
    to_json_oaicompat_chat`, `server_task_result_cmpl_final::to_json_oaicompat_chat_stream`,
    `task_result_state::update_chat_msg`) and `common/chat.cpp` at
    85c9a5042b0693d4932d4e485377c516aafd1b30 (`common_chat_msg_diff_to_json_oaicompat`).
    The first partial opens with `{"role": "assistant", "content": null}`; each diff is one
    chunk; a call's header has `index`, `id` (a random 32-character string), `type` and the
    name with `arguments: ""`; its fragments have `index` and `arguments` only; the final
    result sends a finish chunk with an empty delta, then the usage chunk (`choices: []`,
    no `prompt_tokens_details`) with `timings` appended, whose `cache_n` says how many
    prompt tokens came from the cache.
    """
    model, fp = "gpt-3.5-turbo", "b6500-00efb3e1"  # the model name is the alias, if set

    def piece(delta: dict[str, Any]) -> dict[str, Any]:
        return _chunk(model, fp, [_choice(delta)])

    def header(index: int, call_id: str) -> dict[str, Any]:
        call = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        return piece({"tool_calls": [call]})

    def fragment(index: int, arguments: str) -> dict[str, Any]:
        return piece({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})

    timings = {
        "cache_n": 380,
        "prompt_n": 20,
        "prompt_ms": 41.2,
        "prompt_per_token_ms": 2.06,
        "prompt_per_second": 485.4,
        "predicted_n": 40,
        "predicted_ms": 812.5,
        "predicted_per_token_ms": 20.3,
        "predicted_per_second": 49.2,
    }
    return (
        piece({"role": "assistant", "content": None}),
        header(0, "Xq2LrT8vNw4pK6sB1dZ9yHcM3fJ7aE5u"),
        fragment(0, '{"city":'),
        fragment(0, '"Paris"}'),
        header(1, "Rk7TzP1mWq9sLx3vB6nC8dY2hF4gJ0aQ"),
        fragment(1, '{"city":"Rome"}'),
        _chunk(model, fp, [_choice({}, "tool_calls")]),
        _chunk(
            model,
            fp,
            [],
            usage={"completion_tokens": 40, "prompt_tokens": 400, "total_tokens": 440},
            timings=timings,
        ),
    )


def same_index_parallel_calls() -> tuple[dict[str, Any], ...]:
    """Two calls both at `index: 0`, told apart only by their ids, the id repeated on every
    fragment (not attributed to a server: a chunking the provider must survive)."""
    model = "local-model"

    def piece(call_id: str, name: str | None, arguments: str) -> dict[str, Any]:
        function: dict[str, Any] = {"arguments": arguments}
        if name is not None:
            function["name"] = name
        call = {"index": 0, "id": call_id, "type": "function", "function": function}
        return _chunk(model, None, [_choice({"tool_calls": [call]})])

    return (
        piece("a1B2c3D4", "get_weather", ""),
        piece("a1B2c3D4", None, '{"city":'),
        piece("a1B2c3D4", None, '"Paris"}'),
        piece("e5F6g7H8", "get_weather", '{"city":"Rome"}'),
        _chunk(model, None, [_choice({}, "tool_calls")]),
    )


def no_index_fragments() -> tuple[dict[str, Any], ...]:
    """A server that never sends `index`: two calls, each a name chunk with an id followed
    by id-less argument fragments (not attributed to a server)."""
    model = "local-model"

    def piece(call: dict[str, Any]) -> dict[str, Any]:
        return _chunk(model, None, [_choice({"tool_calls": [call]})])

    return (
        piece(
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}
        ),
        piece({"function": {"arguments": '{"path": "a.txt"'}}),
        piece({"function": {"arguments": "}"}}),
        piece(
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path"'},
            }
        ),
        piece({"function": {"arguments": ': "b.txt"}'}}),
        _chunk(model, None, [_choice({}, "tool_calls")]),
    )
