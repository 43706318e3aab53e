"""Functions registered by a source (the sidecar's workspace files): replaced as one set.

Fleet workers add their specs to the trigger table one by one and never remove them. A source
instead owns a set of function ids and replaces it whole: `replace_source` writes the new
specs, deletes the specs of ids it no longer declares, and stores the source's load errors, in
one Lua script. So a deleted file's functions stop receiving events in the same instant the
new set starts receiving them, and no reader ever sees half of a reload
(`lua/source_replace.lua`).

Also kept per source: the latest failed runs of its functions (`record_failure`), so the agent
and `harness functions` can show them without scanning the run history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter

from harness.redaction import RedactedText
from harness.runtime import scripts
from harness.runtime.bus_errors import on_bus
from harness.runtime.functions import FunctionSpec
from harness.runtime.instance import Runtime

FILE_SOURCE = "file"
MAX_FAILURES = 20


class LoadError(BaseModel, frozen=True):
    """A file that could not be loaded: its name in the folder, the line at fault (0 when
    unknown) and the error's text."""

    file: str
    line: int = 0
    error: RedactedText

    def describe(self) -> str:
        """`file:line: error`, the way compilers say it."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.error}"


class Origin(BaseModel, frozen=True):
    """Where a source's function comes from: the source, the file that declares it, and the
    sha256 of that file's bytes as the source read them before loading ("" when unknown)."""

    source: str
    file: str = ""
    digest: str = ""


class RunFailure(BaseModel, frozen=True):
    """A failed run of a source's function: what `function.failed` said, and when (ms)."""

    function_id: str
    run_id: str
    error: RedactedText
    at_ms: int


class Declaration(BaseModel, frozen=True):
    """Something a source's file declares besides functions (a network of the agent's): its
    `kind`, the file and line, and its `body`, data the engine stores and never reads. The
    body came from untrusted code: whoever reads it validates it."""

    kind: str = Field(max_length=40)
    file: str = Field(max_length=200)
    line: int = 0
    body: dict[str, Any]


_ERRORS = TypeAdapter(list[LoadError])
_DECLARATIONS = TypeAdapter(list[Declaration])


@on_bus("register the sidecar's functions")
def replace_source(
    runtime: Runtime,
    source: str,
    specs: dict[str, tuple[FunctionSpec, Origin]],
    errors: list[LoadError],
    declarations: Sequence[Declaration] = (),
) -> None:
    """Make `specs` (id -> (spec, origin)) the whole set of functions of `source`, `errors`
    its load errors and `declarations` its other declarations, atomically. Ids the source
    registered before and does not list now are removed from the trigger table. Raises on
    Redis errors."""
    keys = runtime.keys
    # cjson turns an empty JSON object into an array; pairs() over it is empty either way
    spec_json = json.dumps({fid: spec.model_dump_json() for fid, (spec, _) in specs.items()})
    origin_json = json.dumps({fid: origin.model_dump_json() for fid, (_, origin) in specs.items()})
    replace = scripts.load(runtime.redis, "source_replace")
    replace(
        keys=[
            keys.functions, keys.functions_version, keys.function_source(source),
            keys.function_origins, keys.load_errors(source), keys.declarations(source),
        ],
        args=[
            spec_json, origin_json, _ERRORS.dump_json(errors).decode(),
            _DECLARATIONS.dump_json(list(declarations)).decode(),
        ],
    )  # fmt: skip


@on_bus("read where functions come from")
def origins(runtime: Runtime) -> dict[str, Origin]:
    """Function id -> origin, for every function a source registered. Raises on Redis errors."""
    raw: dict[str, str] = runtime.redis.hgetall(runtime.keys.function_origins)  # type: ignore[assignment]
    return {fid: Origin.model_validate_json(value) for fid, value in raw.items()}


@on_bus("read a source's functions")
def source_ids(runtime: Runtime, source: str) -> set[str]:
    """The ids `source` registered last. Raises on Redis errors."""
    members: set[str] = runtime.redis.smembers(runtime.keys.function_source(source))  # type: ignore[assignment]
    return {str(m) for m in members}


def is_workspace_function(runtime: Runtime, function_id: str) -> bool:
    """True when the sidecar registered `function_id` from the workspace's `functions/` (the
    sidecar never registers an id of the fleet's). Raises on Redis errors."""
    return function_id in source_ids(runtime, FILE_SOURCE)


@on_bus("read the load errors")
def load_errors(runtime: Runtime, source: str) -> list[LoadError]:
    """The load errors of the source's last registration (empty when none). Raises on Redis
    errors."""
    raw = runtime.redis.get(runtime.keys.load_errors(source))
    return _ERRORS.validate_json(raw) if raw else []


@on_bus("read the declarations")
def declarations(runtime: Runtime, source: str, kind: str) -> list[Declaration]:
    """The declarations of `kind` in the source's last registration (empty when none). Raises
    on Redis errors."""
    raw = runtime.redis.get(runtime.keys.declarations(source))
    found = _DECLARATIONS.validate_json(raw) if raw else []
    return [declaration for declaration in found if declaration.kind == kind]


@on_bus("record a failed run")
def record_failure(runtime: Runtime, source: str, failure: RunFailure) -> None:
    """Remember a failed run of one of the source's functions; only the newest
    `MAX_FAILURES` are kept. Raises on Redis errors."""
    key = runtime.keys.function_failures(source)
    pipe = runtime.redis.pipeline()
    pipe.lpush(key, failure.model_dump_json())
    pipe.ltrim(key, 0, MAX_FAILURES - 1)
    pipe.execute()


@on_bus("read failed runs")
def recent_failures(runtime: Runtime, source: str, limit: int = MAX_FAILURES) -> list[RunFailure]:
    """The newest failed runs of the source's functions, newest first. Raises on Redis
    errors."""
    key = runtime.keys.function_failures(source)
    raw: list[str] = runtime.redis.lrange(key, 0, limit - 1)  # type: ignore[assignment]
    return [RunFailure.model_validate_json(item) for item in raw]


@on_bus("read the load errors and failed runs")
def errors_and_failures(
    runtime: Runtime, source: str, limit: int = MAX_FAILURES
) -> tuple[list[LoadError], list[RunFailure]]:
    """`load_errors` and `recent_failures` of `source` in one round trip (the agent reads both
    for every model call). Raises on Redis errors."""
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.get(runtime.keys.load_errors(source))
    pipe.lrange(runtime.keys.function_failures(source), 0, limit - 1)
    raw_errors, raw_failures = pipe.execute()
    errors = _ERRORS.validate_json(raw_errors) if raw_errors else []
    return errors, [RunFailure.model_validate_json(item) for item in raw_failures]
