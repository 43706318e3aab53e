"""httpx2's line per model request ("HTTP Request: POST <url> 200 OK") kept out of the log
unless `harness.llm` logs at DEBUG: one line per think step that says less than the run's own
lines, formatted on the model gateway's loop (which makes every call of its process) and
relayed by `harness up`. Failures still show: they are the providers' errors, and httpx2's
warnings pass.

Requests are recognised by their URL, under a base URL a provider was built for
(`quiet_requests_to`), so the other users of httpx2 (the channels, MCP) keep their own rules.
"""

from __future__ import annotations

import logging

log = logging.getLogger("harness.llm")

_BASES: set[str] = set()


class _QuietModelRequests(logging.Filter):
    """Drops httpx2's records below WARNING whose URL is under a model's base URL."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or not _BASES:
            return True
        args = record.args
        if not isinstance(args, tuple) or len(args) < 2:
            return True
        if not str(args[1]).startswith(tuple(_BASES)):
            return True
        return log.isEnabledFor(logging.DEBUG)


def quiet_requests_to(base_url: str) -> None:
    """Keep httpx2's per-request lines for URLs under `base_url` out of the log (see the
    module docstring). Idempotent; never raises."""
    _BASES.add(base_url.rstrip("/"))


_FILTER = _QuietModelRequests()
logging.getLogger("httpx2").addFilter(_FILTER)  # idempotent: a filter is added once
