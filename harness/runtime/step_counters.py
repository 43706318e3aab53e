"""What a committed step adds to the fleet's `/metrics` counters (`harness.runtime.fleet_metrics`
reads them): its duration in its function's histogram and a model call's tokens in its
model's totals.

The additions travel with the step's own journal write: `step_counts` gives them as the
`COMMIT` script's trailing arguments, and the script adds them under the same fence, so
committing a step stays one Redis round trip and a step fenced out counts nothing. A replay
commits nothing and so counts nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

# Upper bounds (seconds) of the step-duration buckets: a tool call takes milliseconds, a model
# call seconds, a sandboxed command or a slow model minutes.
STEP_BUCKETS: tuple[float, ...] = (
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)
TOKEN_KINDS: tuple[str, ...] = ("in", "out", "cr", "cw")
SEP = "\t"
"""Between a counter field's subject (function id, model) and its slot: `think-fn\t3`. The
`COMMIT` script joins them with the same character."""


def step_counts(
    function_id: str, started_ms: int, ended_ms: int, usage: Mapping[str, Any] | None
) -> list[str | int]:
    """The counter additions of one committed step as the `COMMIT` script takes them, after
    the record: `function_id`, the step's bucket and its milliseconds (for the function's
    histogram, `Keys.metrics_steps`; `function_id` is '' when `started_ms` is 0, unknown),
    then for a model call (`usage` as `harness.runtime.previews.usage_of` reads it) the model
    and (slot, increment) pairs: one call and each non-zero token count (`Keys.metrics_tokens`).
    The few arguments a plain step sends are what keeps its commit near a bare HSET's cost.
    Never raises on well-formed usage."""
    if started_ms:
        ms = max(0, ended_ms - started_ms)
        out: list[str | int] = [function_id, bisect.bisect_left(STEP_BUCKETS, ms / 1000), ms]
    else:
        out = ["", 0, 0]
    if usage is not None:
        out += (str(usage.get("model") or "unknown"), "calls", 1)
        for kind in TOKEN_KINDS:
            if n := int(usage.get(kind) or 0):
                out += (kind, n)
    return out
