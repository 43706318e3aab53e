"""Prompt caching the way the real services report it, for the scripted model server.

Tokens are estimated as characters / 4 of each block's canonical JSON (cache markers left
out, since they are not part of the cached content).

- Anthropic: a request is read as blocks (tools, system blocks, then every message's
  content blocks, in order). Each `cache_control` breakpoint writes the prefix up to it. A
  call reads the longest written prefix that ends at or up to 20 blocks before one of its
  breakpoints; `cache_creation_input_tokens` is what lies between that and its last
  breakpoint; `input_tokens` is what comes after.
- OpenAI: automatic prefix caching with no markers: the longest prefix, in whole messages
  (tools first), shared with an earlier request counts as cached when it is at least 1,024
  tokens, rounded down to a multiple of 128.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

_LOOKBACK = 20


@dataclass(frozen=True)
class CacheUsage:
    """What a call reports: uncached input, read from the cache, written to it."""

    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def _tokens(block: Any) -> int:
    return len(json.dumps(block, sort_keys=True)) // 4 + 1


def _strip(block: Any) -> tuple[Any, bool]:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}, True
    return block, False


class PromptCache:
    """The cache of one fake server. Thread-safe; never expires."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._written: set[str] = set()

    def usage(self, api: str, body: dict[str, Any]) -> CacheUsage:
        """Account for one request and remember what it wrote."""
        if api == "anthropic":
            return self._anthropic(body)
        return self._openai(body)

    def _anthropic(self, body: dict[str, Any]) -> CacheUsage:
        blocks: list[Any] = []
        marks: list[bool] = []
        system = body.get("system") or []
        system = [{"type": "text", "text": system}] if isinstance(system, str) else system
        raw = [*(body.get("tools") or []), *system]
        for message in body.get("messages") or []:
            content = message.get("content")
            content = [{"type": "text", "text": content}] if isinstance(content, str) else content
            raw.extend(
                {"role": message["role"], **b} if i == 0 else b for i, b in enumerate(content)
            )
        for block in raw:
            stripped, marked = _strip(block)
            blocks.append(stripped)
            marks.append(marked)
        keys, sizes = _prefixes(blocks)
        points = [i for i, marked in enumerate(marks) if marked]
        with self._lock:
            read_end = -1
            for point in points:
                for end in range(point, max(point - _LOOKBACK, -1), -1):
                    if keys[end] in self._written:
                        read_end = max(read_end, end)
                        break
            for point in points:
                self._written.add(keys[point])
        total = sizes[-1] if sizes else 0
        read = sizes[read_end] if read_end >= 0 else 0
        cached_end = sizes[points[-1]] if points else 0
        write = max(cached_end - read, 0)
        return CacheUsage(max(total - read - write, 0), read, write)

    def _openai(self, body: dict[str, Any]) -> CacheUsage:
        blocks = [body.get("tools") or [], *(body.get("messages") or [])]
        keys, sizes = _prefixes(blocks)
        with self._lock:
            shared = max((i for i, key in enumerate(keys) if key in self._written), default=-1)
            self._written.update(keys)
        total = sizes[-1]
        cached = sizes[shared] if shared >= 0 else 0
        cached = 0 if cached < 1024 else cached - cached % 128
        return CacheUsage(total - cached, cached, 0)


def _prefixes(blocks: list[Any]) -> tuple[list[str], list[int]]:
    """For each block, a hash of the prefix ending with it and the prefix's token count."""
    digest = hashlib.sha256()
    keys: list[str] = []
    sizes: list[int] = []
    total = 0
    for block in blocks:
        digest.update(json.dumps(block, sort_keys=True).encode())
        keys.append(digest.copy().hexdigest())
        total += _tokens(block)
        sizes.append(total)
    return keys, sizes
