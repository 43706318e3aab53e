"""`@network`: a network declared in Python by a file of the workspace's `functions/`.

    from pydantic import BaseModel
    from harness.agent.api import network

    class Nightly(BaseModel):
        findings: list[str] = []
        summary: str | None = None

    @network(name="nightly", agents=["researcher", "writer"], state=Nightly, max_iterations=6,
             description="Researches, then writes the summary.")
    def route(state: Nightly, last, iteration):
        if not state.findings:
            return "researcher"
        return "writer" if not state.summary else None

Only the sidecar's function host imports such a file (never a fleet process). The decorator
declares two things there:

- the router, a durable function `network-router-<name>` (`router_id`) answering a function
  router's request (`function_router`): it validates the request's state into the model (a
  state the model refuses stops the network, saying why) and calls the decorated function
  with the model instance, the last result (`{"agent", "answer", "failed"}` or None) and the
  iteration; it returns an agent's name, None to stop, or `(name or None, reason)`;
- the network, as DATA: the same fields as a network file, with `router: {kind: function,
  id: network-router-<name>}` and the model's JSON Schema (`model_json_schema()`) as its
  state schema. The loader collects it (`capture_networks`), the sidecar registers it beside
  the functions (`function_sources.Declaration`), and the fleet validates it again like a
  file (`load.parse_declared`) before any network runs it.

A declaration that breaks a network file's rules, or a state model with a field without a
default (the state starts empty and fills in), raises at import: the file fails to load with
that error, like a bad `@function`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.agent.networks.spec import NetworkSpec
from harness.runtime import Context, event, function
from harness.runtime.function_sources import Declaration
from harness.runtime.functions import Function

NETWORK_KIND = "network"
"""The `Declaration.kind` of a declared network."""
ROUTER_PREFIX = "network-router-"
REASON_CHARS = 300

Router = Callable[[Any, "dict[str, Any] | None", int], Any]
_captured: ContextVar[list[Declaration] | None] = ContextVar("network_capture", default=None)


def router_id(name: str) -> str:
    """The function id of the router of the declared network `name`."""
    return f"{ROUTER_PREFIX}{name}"


@contextmanager
def capture_networks() -> Iterator[list[Declaration]]:
    """Inside this block, `@network` declarations are appended to the list it yields (the
    sidecar's loader imports one file at a time this way). Outside one they are not kept."""
    found: list[Declaration] = []
    token = _captured.set(found)
    try:
        yield found
    finally:
        _captured.reset(token)


def network(
    *,
    name: str,
    agents: Iterable[str],
    description: str,
    state: type[BaseModel] | Mapping[str, Any] | None = None,
    max_iterations: int = 10,
    bindings: Iterable[Mapping[str, Any]] = (),
    instructions: str = "",
) -> Callable[[Router], Function]:
    """Declare the network `name` routed by the decorated function (see the module). `state`
    is a pydantic model (its JSON Schema types the state; the router gets an instance) or a
    JSON Schema. Raises `ValueError` when the declaration breaks a network file's rules."""
    model = state if isinstance(state, type) and issubclass(state, BaseModel) else None
    schema = _schema(state, model)
    fields: dict[str, Any] = {
        "name": name, "description": description, "agents": tuple(agents),
        "router": {"kind": "function", "id": router_id(name)}, "state": schema,
        "max_iterations": max_iterations, "bindings": tuple(dict(b) for b in bindings),
        "instructions": instructions,
    }  # fmt: skip
    try:
        spec = NetworkSpec.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"@network {name!r}: {where}: {first['msg']}") from None

    def decorate(router: Router) -> Function:
        code = getattr(router, "__code__", None)
        line = int(code.co_firstlineno) if code is not None else 0
        body = spec.model_dump(mode="json", exclude={"path"}, exclude_defaults=True)
        found = _captured.get()
        if found is not None:
            found.append(Declaration(kind=NETWORK_KIND, file="", line=line, body=body))
        handler = _router_handler(spec.name, router, model)
        return function(id=router_id(spec.name), trigger=event(f"network/{spec.name}.route"))(
            handler
        )

    return decorate


def _schema(state: object, model: type[BaseModel] | None) -> dict[str, Any]:
    if model is not None:
        required = model.model_json_schema().get("required", [])
        if required:
            raise ValueError(
                f"@network state {model.__name__}: every field needs a default (the state "
                f"starts empty and fills in); no default: {', '.join(required)}"
            )
        return model.model_json_schema()
    if state is None:
        return {"type": "object"}
    if isinstance(state, Mapping):
        return dict(state)
    raise ValueError(f"@network state must be a pydantic model or a JSON Schema, not {state!r}")


def _router_handler(
    name: str, router: Router, model: type[BaseModel] | None
) -> Callable[[Context], dict[str, Any]]:
    """The durable function answering the network run's request for a decision."""

    def handler(ctx: Context) -> dict[str, Any]:
        data = ctx.event.data
        state: Any = data.get("state") or {}
        if model is not None:
            try:
                state = model.model_validate(state)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "(the top level)"
                why = f"the state does not fit {model.__name__} at {where}: {first['msg']}"
                return {"next": None, "reason": why[:REASON_CHARS]}
        chosen = router(state, data.get("last"), int(data.get("iteration") or 0))
        reason = ""
        if isinstance(chosen, tuple) and len(chosen) == 2:
            chosen, reason = chosen
        if not reason:
            reason = f"{getattr(router, '__name__', name)} chose {chosen}"
        return {"next": chosen, "reason": str(reason)[:REASON_CHARS]}

    return handler
