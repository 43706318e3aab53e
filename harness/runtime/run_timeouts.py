"""Per-execution timeouts for functions whose code cannot be trusted to stop (the sidecar's).

A Python thread cannot be killed. So when an execution outlives its timeout, the run is failed
at once (no retries: the same code would time out again) with `RunTimeoutError`, and then
`on_expiry` is called; the sidecar child passes a callback that ends its own process, which is
the only way to stop the runaway code. Other runs of that process resume elsewhere from their
journals, as after a crash.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from harness.errors import RunTimeoutError
from harness.runtime.executor import _fail
from harness.runtime.functions import Function
from harness.runtime.steps import Context

log = logging.getLogger(__name__)


def with_timeout(fn: Function, seconds: float, on_expiry: Callable[[str], None]) -> Function:
    """A copy of `fn` whose every execution (one advance of a run) is limited to `seconds`.

    Past the limit the run is failed with `RunTimeoutError` (which publishes
    `function.failed`) and `on_expiry(run_id)` is called, from a timer thread. When the
    execution ended in the meantime, nothing happens.
    """

    def handler(ctx: Context) -> Any:
        timer = threading.Timer(seconds, _expire, (ctx, seconds, fn.id, on_expiry))
        timer.daemon = True
        timer.start()
        try:
            return fn.handler(ctx)
        finally:
            timer.cancel()

    return Function(spec=fn.spec, handler=handler)


def _expire(
    ctx: Context, seconds: float, function_id: str, on_expiry: Callable[[str], None]
) -> None:
    state = ctx._state  # the runtime's own view of the run, to fail it with its epoch
    error = RunTimeoutError(f"function {function_id!r} ran longer than its timeout of {seconds:g}s")
    try:
        outcome = _fail(state, error, function_id)
    except Exception as exc:  # Redis down: the lease expires and the run is retried
        log.error("run %s timed out and could not be failed: %s", ctx.run_id, exc)
        outcome = "failed"
    if outcome == "failed":
        on_expiry(ctx.run_id)
