"""Streamed tool-call chunks in the shapes OpenAI-compatible local servers send them.

Written from the servers' observed output (field sets, ordering, what is absent), not
generated from our own renderer, so the provider is tested against what arrives in the field:

- Ollama: the whole call in one chunk, `finish_reason: "stop"` even though a tool was
  called, and (before 0.5) no `index` on the call.
- vLLM: name in a first chunk with empty arguments, then argument fragments carrying only
  `index`; `finish_reason: "tool_calls"`; usage with `prompt_tokens_details: null`.
- llama.cpp `llama-server`: the `id` repeated on every fragment, two parallel calls both
  sent with `index: 0`, and usage in the last choice-carrying chunk with `timings`.
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


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish}


def ollama(*, with_index: bool) -> tuple[dict[str, Any], ...]:
    """Ollama: `get_weather(city=Paris)` whole in one chunk, then `finish_reason: stop`."""
    call: dict[str, Any] = {
        "id": "call_x1y2z3",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
    if with_index:
        call["index"] = 0
    model, fp = "llama3.1:8b", "fp_ollama"
    return (
        _chunk(model, fp, [_choice({"role": "assistant", "content": "", "tool_calls": [call]})]),
        _chunk(model, fp, [_choice({"role": "assistant", "content": ""}, "stop")]),
        _chunk(
            model,
            fp,
            [],
            usage={"prompt_tokens": 212, "completion_tokens": 18, "total_tokens": 230},
        ),
    )


def vllm() -> tuple[dict[str, Any], ...]:
    """vLLM (hermes parser): `get_weather(city=Paris)` as a name chunk and fragments."""
    model = "Qwen/Qwen2.5-7B-Instruct"
    first = {
        "index": 0,
        "id": "chatcmpl-tool-5f0c",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    fragments = ['{"city": ', '"Par', 'is"}']
    return (
        _chunk(model, None, [_choice({"role": "assistant", "content": ""})]),
        _chunk(model, None, [_choice({"tool_calls": [first]})]),
        *(
            _chunk(
                model, None, [_choice({"tool_calls": [{"index": 0, "function": {"arguments": f}}]})]
            )
            for f in fragments
        ),
        _chunk(model, None, [_choice({"content": ""}, "tool_calls")]),
        _chunk(
            model,
            None,
            [],
            usage={
                "prompt_tokens": 305,
                "completion_tokens": 24,
                "total_tokens": 329,
                "prompt_tokens_details": None,
            },
        ),
    )


def llama_cpp() -> tuple[dict[str, Any], ...]:
    """llama-server: two calls, `get_weather(Paris)` and `get_weather(Rome)`, both at
    `index: 0`, each fragment repeating its call's id."""
    model = "gpt-3.5-turbo"  # llama-server echoes a placeholder unless --alias is set

    def piece(call_id: str, name: str | None, arguments: str) -> dict[str, Any]:
        function: dict[str, Any] = {"arguments": arguments}
        if name is not None:
            function["name"] = name
        call = {"index": 0, "id": call_id, "type": "function", "function": function}
        return _chunk(model, "b5000-llamacpp", [_choice({"tool_calls": [call]})])

    return (
        _chunk(model, "b5000-llamacpp", [_choice({"role": "assistant", "content": None})]),
        piece("a1B2c3D4", "get_weather", ""),
        piece("a1B2c3D4", None, '{"city":'),
        piece("a1B2c3D4", None, '"Paris"}'),
        piece("e5F6g7H8", "get_weather", '{"city":"Rome"}'),
        _chunk(
            model,
            "b5000-llamacpp",
            [_choice({}, "tool_calls")],
            usage={
                "prompt_tokens": 400,
                "completion_tokens": 40,
                "total_tokens": 440,
                "prompt_tokens_details": {"cached_tokens": 380},
            },
            timings={"prompt_n": 20, "cache_n": 380, "predicted_n": 40},
        ),
    )


def no_index_fragments() -> tuple[dict[str, Any], ...]:
    """A server that never sends `index`: two calls, each a name chunk with an id followed
    by id-less argument fragments."""
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
