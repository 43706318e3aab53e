"""A test function served as if the sidecar had loaded it from the workspace's `functions/`.

The sidecar runs such a function in its sandboxed host and records its id as the file
source's (`harness.runtime.function_sources`); the fleet's code that invokes one checks that
record. Here the function runs in-process (`drain`), and the record is written the same way,
so the invoke and the check are the real ones."""

from __future__ import annotations

from harness.runtime import Runtime
from harness.runtime.function_sources import FILE_SOURCE, Origin, replace_source
from harness.runtime.functions import Function, FunctionRegistry


def serve_as_workspace_function(
    runtime: Runtime, registry: FunctionRegistry, *fns: Function, recorded: bool = True
) -> None:
    """Register `fns` to run in this process and, when `recorded`, record them as the
    functions of the workspace's `functions/` (as the sidecar's executor does for what it
    loaded: the whole set at once, replacing what was recorded before)."""
    for fn in fns:
        registry.register(fn)
    runtime.register_functions()
    if recorded:
        loaded = {fn.id: (fn.spec, Origin(source=FILE_SOURCE, file=f"{fn.id}.py")) for fn in fns}
        replace_source(runtime, FILE_SOURCE, loaded, [])
