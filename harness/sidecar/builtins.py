"""The functions every sidecar child registers besides the workspace's own.

- `sidecar-heartbeat` (cron, every 5 minutes): its last run in `harness functions` says
  whether the sidecar is alive and running runs, not just registered.
- `sidecar-failures` (on `function.failed`): remembers failed runs of workspace functions, so
  the agent sees them when it next thinks and `harness functions` can list them.

`python -m harness.sidecar.builtins` prints `fleet_builtin_ids()` as a JSON list: the sidecar's
supervisor asks it once, so that it does not hold the fleet's modules for its whole life.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Collection
from typing import Any

from harness.errors import HarnessError
from harness.events import FUNCTION_FAILED, FunctionFailed
from harness.fleet_functions import BUILTIN_FUNCTION_MODULES
from harness.runtime import Context, Function, cron, event, function
from harness.runtime.function_sources import FILE_SOURCE, RunFailure, record_failure
from harness.runtime.functions import REGISTRY, FunctionRegistry, capture_declarations
from harness.runtime.module_loader import load_function_modules

HEARTBEAT = "sidecar-heartbeat"
FAILURES = "sidecar-failures"
BUILTIN_IDS = frozenset({HEARTBEAT, FAILURES})
HEARTBEAT_CRON = "*/5 * * * *"


def builtin_functions(workspace_ids: Collection[str], fleet_ids: Collection[str]) -> list[Function]:
    """The heartbeat and the failure recorder. The recorder keeps failures of every function
    but the fleet's (`fleet_ids`) and its own: a workspace function may have been deleted or
    renamed by the time its failure is handled, so it cannot be recognised by name."""
    registry = FunctionRegistry()
    watched = frozenset(workspace_ids)
    ignored = frozenset(fleet_ids) | BUILTIN_IDS

    @function(id=HEARTBEAT, trigger=cron(HEARTBEAT_CRON), retries=0, registry=registry)
    def heartbeat(ctx: Context) -> dict[str, Any]:
        return {"pid": os.getpid(), "functions": len(watched)}

    @function(id=FAILURES, trigger=event(FUNCTION_FAILED), retries=2, registry=registry)
    def failures(ctx: Context) -> bool:
        data = FunctionFailed.model_validate(ctx.event.data)
        if data.function_id in ignored:
            return False
        failure = RunFailure(
            function_id=data.function_id, run_id=data.run_id, error=data.error, at_ms=ctx.event.ts
        )
        ctx.step.run("record", record_failure, ctx.runtime, FILE_SOURCE, failure)
        return True

    return registry.all()


def fleet_builtin_ids() -> frozenset[str]:
    """The ids the fleet's built-in modules declare (imported here if they were not), so that
    a file can never take one over, even while no worker has registered them yet."""
    captured = FunctionRegistry()
    with capture_declarations(captured):
        load_function_modules(BUILTIN_FUNCTION_MODULES)
    declared = {fn.id for fn in captured.all()}
    return frozenset(declared or {fn.id for fn in REGISTRY.all()})


def main() -> int:
    """Print the fleet's built-in ids as one JSON list on stdout; 1 (and why, on stderr) when
    a built-in module cannot be loaded."""
    try:
        ids = fleet_builtin_ids()
    except HarnessError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(sorted(ids)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
