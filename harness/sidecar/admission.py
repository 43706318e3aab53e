"""What the executor accepts of a host's report: the host runs agent code, so its `Loaded` is
checked again on the trusted side before anything reaches the trigger table.

Each spec is declared again through `harness.runtime.function` (the same checks as at import:
id, cron expression and time zone, trigger predicates, key paths), and an id that is reserved
(the fleet's, the sidecar's built-ins') or reported twice is refused, so a host that lies
cannot take over the agent's handler or put a spec no publisher can evaluate in the table.

Its other declarations (`@network`) are checked the same way (`admit_declarations`): with a
network file's rules, capped in size and number, named once, each routed by its own router
function, which must be among the functions admitted.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from harness.agent.networks.declare import router_id
from harness.agent.networks.declared import MAX_DECLARED, check_declared, place
from harness.errors import InvalidFunctionError
from harness.runtime.function_sources import Declaration, LoadError
from harness.runtime.functions import (
    CronTrigger,
    EventTrigger,
    FunctionRegistry,
    FunctionSpec,
    cron,
    event,
    function,
)
from harness.sidecar.wire import Loaded


@dataclass
class Admitted:
    """The specs accepted (with the file that declared each) and the load errors to show."""

    specs: list[FunctionSpec] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    errors: list[LoadError] = field(default_factory=list)
    declarations: list[Declaration] = field(default_factory=list)


def admit(loaded: Loaded, reserved: Collection[str]) -> Admitted:
    """The host's report, checked: never raises for what the host sent."""
    admitted = Admitted(errors=list(loaded.report.errors))
    seen: set[str] = set()
    for spec in loaded.specs:
        file = loaded.files.get(spec.id, "")[:200]
        problem = _problem(spec, reserved, seen)
        if problem is not None:
            admitted.errors.append(LoadError(file=file or "?", error=problem))
            continue
        seen.add(spec.id)
        admitted.specs.append(spec)
        admitted.files[spec.id] = file
    admit_declarations(admitted, loaded.declarations)
    return admitted


def admit_declarations(admitted: Admitted, declarations: list[Declaration]) -> None:
    """Add to `admitted` the declarations that pass `check_declared`, are routed by an
    admitted function and name a network not declared before; a load error for each other
    (with its file and line). Never raises."""
    named: dict[str, Declaration] = {}
    for declaration in declarations:
        file = declaration.file[:200] or "?"
        checked = check_declared(declaration)
        if isinstance(checked, str):
            problem = checked
        elif checked.name in named:
            first = named[checked.name]
            problem = f"network {checked.name!r} is already declared at {place(first)}:{first.line}"
        elif admitted.files.get(router_id(checked.name)) != declaration.file:
            problem = f"network {checked.name!r}: its router function was not loaded"
        elif len(named) >= MAX_DECLARED:
            problem = f"more than {MAX_DECLARED} networks are declared: {checked.name!r} is not"
        else:
            named[checked.name] = declaration
            admitted.declarations.append(declaration)
            continue
        admitted.errors.append(LoadError(file=file, line=declaration.line, error=problem))


def _problem(spec: FunctionSpec, reserved: Collection[str], seen: set[str]) -> str | None:
    if spec.id in reserved:
        return f"function id {spec.id!r} is the id of a built-in function; rename it"
    if spec.id in seen:
        return f"function id {spec.id!r} is declared twice"
    try:
        triggers = [_checked(trigger) for trigger in spec.triggers]
        function(
            id=spec.id, trigger=triggers, retries=spec.retries, singleton=spec.singleton,
            concurrency=spec.concurrency, catch_up=spec.catch_up, queue=spec.queue,
            timeout=spec.timeout, registry=FunctionRegistry(),
        )(lambda ctx: None)  # fmt: skip
    except (InvalidFunctionError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _checked(trigger: EventTrigger | CronTrigger) -> EventTrigger | CronTrigger:
    if isinstance(trigger, CronTrigger):
        return cron(trigger.expression, trigger.tz)
    return event(trigger.name, trigger.if_)
