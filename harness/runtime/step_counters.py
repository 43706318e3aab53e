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
"""Between a counter field's subject (function id, model) and its slot: `think-fn\\t3`."""
STEPS, TOKENS = "steps", "tokens"
"""The counter hashes, `<prefix>:metrics:<name>` (`Keys.metrics_steps`, `Keys.metrics_tokens`)."""


def step_counts(
    function_id: str, started_ms: int, ended_ms: int, usage: Mapping[str, Any] | None
) -> list[str | int]:
    """The counter additions of one committed step, flat in threes (hash name, field,
    increment) as the `COMMIT` script takes them: the step's bucket and milliseconds in
    `function_id`'s histogram (none when `started_ms` is 0, unknown), and for a model call
    (`usage` as `harness.runtime.previews.usage_of` reads it) one call and each non-zero
    token count in its model's totals. Never raises on well-formed usage."""
    out: list[str | int] = []
    if started_ms:
        fn = function_id + SEP
        ms = max(0, ended_ms - started_ms)
        bucket = bisect.bisect_left(STEP_BUCKETS, ms / 1000)
        out += (STEPS, f"{fn}{bucket}", 1, STEPS, f"{fn}sum_ms", ms)
    if usage is not None:
        model = str(usage.get("model") or "unknown") + SEP
        out += (TOKENS, f"{model}calls", 1)
        for kind in TOKEN_KINDS:
            if n := int(usage.get(kind) or 0):
                out += (TOKENS, f"{model}{kind}", n)
    return out
