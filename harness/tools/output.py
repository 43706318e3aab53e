"""Bounded buffers for command output."""

from __future__ import annotations

MAX_LINES = 2000
MAX_BYTES = 50 * 1024


class TailBuffer:
    """Keeps the last `max_bytes` of a byte stream and counts everything that went through.

    `render` returns the tail, at most `max_lines` lines and `max_bytes` bytes, decoded as
    UTF-8 (bad bytes replaced), preceded by a note saying how much was cut, if anything.
    Memory stays bounded whatever the stream's length.
    """

    def __init__(self, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self.total_bytes = 0
        self.total_newlines = 0
        self._ends_with_newline = False

    def add(self, chunk: bytes) -> None:
        """Append `chunk`, dropping the oldest bytes beyond what `render` can show."""
        self.total_bytes += len(chunk)
        self.total_newlines += chunk.count(b"\n")
        if chunk:
            self._ends_with_newline = chunk.endswith(b"\n")
        self._buffer += chunk
        if len(self._buffer) > 2 * self.max_bytes:
            del self._buffer[: len(self._buffer) - self.max_bytes]

    def render(self) -> str:
        """Return the kept tail as text with a leading note when output was cut."""
        data = bytes(self._buffer).removesuffix(b"\n")
        lines = data.split(b"\n") if data else []
        total_lines = self.total_newlines + (0 if self._ends_with_newline or not data else 1)
        kept: list[bytes] = []
        size = 0
        for line in reversed(lines):
            if len(kept) == self.max_lines or size + len(line) + 1 > self.max_bytes:
                break
            kept.append(line)
            size += len(line) + 1
        if not kept and lines:
            # One line longer than the byte cap: keep its end.
            kept.append(lines[-1][-self.max_bytes :])
        kept.reverse()
        text = b"\n".join(kept).decode("utf-8", errors="replace")
        shown_bytes = sum(len(line) + 1 for line in kept)
        if shown_bytes >= self.total_bytes:
            return text
        return (
            f"[output cut: showing the last {len(kept)} of {total_lines} lines "
            f"({_size(shown_bytes)} of {_size(self.total_bytes)})]\n{text}"
        )


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / 1024 / 1024:.1f} MB"
