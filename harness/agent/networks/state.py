"""A network's shared state: typed by its JSON Schema, read and written by its agents through
the `state_get` and `state_set` tools, merged by the network run.

Exactly once, across crashes: an agent of a network (a child run) gets a snapshot of the state
in its task (`SubagentTask.network_state`). Each `state_set` is validated in a durable step
of the child ("state-set") against the snapshot plus the child's earlier writes; the write is
kept, in order, when the step said it was valid, on the first execution and on every replay
alike, so a resumed child holds the same writes. The child returns them with its answer, and
the network run applies them to its state in a step of its own.

While a network runs its state fills in, so `required` keys are not enforced (every other
keyword is, on every write): the schema's top-level `required` is dropped when checking.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from harness.events import SharedState
from harness.llm.types import ToolCall, ToolResult, ToolSpec

if TYPE_CHECKING:
    from harness.runtime.steps import Context

STATE_GET = "state_get"
STATE_SET = "state_set"
STATE_TOOLS = frozenset({STATE_GET, STATE_SET})
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
MAX_VALUE_CHARS = 64_000


class StateUpdate(BaseModel):
    """One accepted `state_set`: top-level `key` set to `value`."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(pattern=KEY.pattern)
    value: Any = None


def check_state(schema: Mapping[str, Any], state: Mapping[str, Any]) -> str | None:
    """Why `state` breaks `schema` (`required` aside), or None when it fits."""
    # Imported here: jsonschema holds ~3 MB in every fleet process; only a network needs it.
    import jsonschema

    partial = {k: v for k, v in schema.items() if k != "required"}
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(partial).iter_errors(dict(state))
    )
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def applied(
    schema: Mapping[str, Any], state: Mapping[str, Any], updates: Sequence[StateUpdate]
) -> tuple[dict[str, Any], list[str]]:
    """`state` with `updates` applied in order, and why each refused one was (an update that
    would break the schema is left out)."""
    merged = copy.deepcopy(dict(state))
    refused: list[str] = []
    for update in updates:
        candidate = {**merged, update.key: update.value}
        problem = check_state(schema, candidate)
        if problem is None:
            merged = candidate
        else:
            refused.append(f"{update.key}: {problem}")
    return merged, refused


def state_specs() -> list[ToolSpec]:
    """The two state tools, as the model sees them."""
    return [
        ToolSpec(
            name=STATE_GET,
            description=(
                "Read the network's shared state: one key, or (without a key) all of it, as JSON."
            ),
            parameters={
                "type": "object",
                "properties": {"key": {"type": "string", "description": "A top-level key."}},
            },
        ),
        ToolSpec(
            name=STATE_SET,
            description=(
                "Set one top-level key of the network's shared state to a JSON value. The "
                "value is checked against the state's schema; a refused write changes nothing."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": "A top-level key."},
                    "value": {"description": "Any JSON value the schema allows for the key."},
                },
                "required": ["key", "value"],
            },
        ),
    ]


class SharedStateTools:
    """The state tools of one agent of a network run: its snapshot, its writes so far."""

    def __init__(self, ctx: Context, shared: SharedState) -> None:
        self.ctx = ctx
        self.schema = shared.state_schema
        self.snapshot = shared.data
        self.updates: list[StateUpdate] = []

    def current(self) -> dict[str, Any]:
        """The snapshot with this agent's writes applied."""
        return applied(self.schema, self.snapshot, self.updates)[0]

    def offered(self, fallback: Callable[[], Sequence[ToolSpec]]) -> Callable[[], list[ToolSpec]]:
        """The turn's tools (asked before each model call) and the state tools."""
        return lambda: [*fallback(), *state_specs()]

    def act(self, fallback: Callable[[ToolCall], ToolResult]) -> Callable[[ToolCall], ToolResult]:
        """The turn's `act` with the state tools answered here; other calls go to `fallback`."""

        def act(call: ToolCall) -> ToolResult:
            if call.name == STATE_GET:
                return self._get(call)
            if call.name == STATE_SET:
                return self._set(call)
            return fallback(call)

        return act

    def _get(self, call: ToolCall) -> ToolResult:
        state, key = self.current(), call.arguments.get("key")
        if key in (None, ""):
            return _result(call, json.dumps(state, sort_keys=True))
        if not isinstance(key, str) or key not in state:
            return _result(call, f"(not set: {key!r})")
        return _result(call, json.dumps(state[key]))

    def _set(self, call: ToolCall) -> ToolResult:
        raw = self.ctx.step.run("state-set", self._check, call.arguments)
        if not raw["is_error"]:  # the same on a replay: the writes are rebuilt from the journal
            self.updates.append(StateUpdate.model_validate(raw["update"]))
        return _result(call, raw["content"], raw["is_error"])

    def _check(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        key = arguments.get("key")
        if not isinstance(key, str) or not KEY.match(key):
            return _refusal(f"key must be a top-level name (a-z, 0-9, _ and -); got {key!r}")
        if "value" not in arguments:
            return _refusal("state_set needs a value")
        value = arguments["value"]
        if len(json.dumps(value)) > MAX_VALUE_CHARS:
            return _refusal(f"the value is larger than {MAX_VALUE_CHARS} characters of JSON")
        problem = check_state(self.schema, {**self.current(), key: value})
        if problem is not None:
            return _refusal(f"refused, the state is unchanged: {problem}")
        update = StateUpdate(key=key, value=value)
        return {"content": f"set {key}", "is_error": False, "update": update.model_dump()}


def _refusal(text: str) -> dict[str, Any]:
    return {"content": text, "is_error": True}


def _result(call: ToolCall, content: str, is_error: bool = False) -> ToolResult:
    return ToolResult(tool_call_id=call.id, content=content, is_error=is_error)
