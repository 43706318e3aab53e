"""`LOG_FORMAT=json`: one JSON object per log line, with the run, function, session and step
the line was written in, and every secret redacted. The text format is redacted too."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from harness.redaction import redact
from harness.runtime import log_context
from harness.runtime.banner import GATE

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """Formats a record as `{"ts", "level", "logger", "message", "run_id", "function",
    "session_key", "step"[, "exc"]}`; empty context fields are left out. Never raises."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        line: dict[str, str] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
            "run_id": getattr(record, "run_id", "") or log_context.RUN_ID.get(),
            "function": log_context.FUNCTION_ID.get(),
            "session_key": log_context.SESSION_KEY.get(),
            "step": log_context.STEP.get(),
        }
        if record.exc_info:
            line["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps({k: v for k, v in line.items() if v}, ensure_ascii=False)


class RedactingFormatter(logging.Formatter):
    """The human-readable format, with secrets redacted from the whole line."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as text, redacted."""
        return redact(super().format(record))


def configure_logging(level: str, log_format: str) -> None:
    """Point the root logger at stderr in `log_format` (`text` or `json`) at `level`.
    Replaces handlers set before, so calling it twice does not double lines. Python warnings
    (a library's `SecurityWarning`) are logged too (`py.warnings`), in the same format. The
    handler carries the start-up gate (`harness.runtime.banner.GATE`): it holds routine lines
    back only in a process that started quietly."""
    handler = logging.StreamHandler()
    formatter: logging.Formatter = (
        JsonFormatter() if log_format == "json" else RedactingFormatter(TEXT_FORMAT)
    )
    handler.setFormatter(formatter)
    handler.addFilter(GATE)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.captureWarnings(True)
