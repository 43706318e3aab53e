"""What one network file declares: `NetworkSpec`, validated from its front matter and body.

    ---
    description: Drafts an answer, then has it reviewed until it is accepted.
    agents: [writer, reviewer]
    router:
      kind: rules
      rules:
        - {when: {state: accepted, equals: true}, then: stop}
        - {when: {state: draft, missing: true}, then: writer}
        - {when: {last_agent: writer}, then: reviewer}
        - {then: agent}                  # no rule matched: the routing agent decides
    state: {type: object, properties: {draft: {type: string}, accepted: {type: boolean}}}
    max_iterations: 6
    bindings: [{channel: slack, chat_id: C0123}]   # optional: chats this network answers
    ---
    Route drafting to the writer and checking to the reviewer.   # the routing agent's brief

A network file is data, never code: its router is a rule list (`rules`), a fixed order
(`sequence`), a routing agent's model call (`agent`), or the name of a Python router the
operator registered (`python`, `harness.agent.networks.code_routers`), or the id of a
function the agent wrote in `functions/` (`function`: run in the sidecar's sandbox, invoked
durably by the network run). Unknown keys are errors, not ignored; which agents exist is
checked by the loader (`load.py`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.agent.roster.spec import NAME_PATTERN, Binding

STOP = "stop"
"""A rule's `then` (and the routing agent's `next`) that ends the network."""
HAND_OVER = "agent"
"""A rule's `then` that hands the decision to the routing agent."""
FIRST = "none"
"""`last_agent: none` matches before any agent has run."""
RESERVED = frozenset({STOP, HAND_OVER, FIRST})
ANY_OBJECT: dict[str, Any] = {"type": "object"}
KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}(\.[A-Za-z_][A-Za-z0-9_-]{0,63}){0,3}$")
"""A state key a rule reads: a top-level key, or a dotted path into nested objects."""
FUNCTION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
"""A function router's id: a durable function's id as `@function(id=...)` gives it."""
TESTS = ("equals", "not_equals", "in_", "missing", "truthy", "at_least", "at_most")

_Strict = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Condition(BaseModel):
    """One test; every subject it names must hold. `state` names a key (dotted for nested
    objects) with exactly one test of its value; `last_agent` the agent that ran last
    (`none` before any did); `last_empty` whether that agent's answer was empty;
    `iteration_at_least` how many agents have run."""

    model_config = _Strict

    state: str | None = Field(default=None, pattern=KEY_PATTERN.pattern)
    equals: Any = None
    not_equals: Any = None
    in_: tuple[Any, ...] | None = Field(default=None, alias="in", min_length=1)
    missing: bool | None = None
    truthy: bool | None = None
    at_least: float | None = None
    at_most: float | None = None
    last_agent: str | None = None
    last_empty: bool | None = None
    iteration_at_least: int | None = Field(default=None, ge=0, le=50)

    @model_validator(mode="after")
    def _one_test_per_state_key(self) -> Condition:
        given = [t.rstrip("_") for t in TESTS if t in self.model_fields_set]
        if self.state is None and given:
            raise ValueError(f"{given[0]!r} tests a state key: add `state: <key>`")
        if self.state is not None and len(given) != 1:
            raise ValueError(
                "a state condition needs exactly one test (equals, not_equals, in, missing, "
                f"truthy, at_least, at_most); got {given or 'none'}"
            )
        subjects = ("state", "last_agent", "last_empty", "iteration_at_least")
        if not any(s in self.model_fields_set for s in subjects):
            raise ValueError(
                "a condition needs state, last_agent, last_empty or iteration_at_least"
            )
        return self

    @property
    def test(self) -> str:
        """The state test it makes (`in_` for `in`); "" when it tests no state key."""
        return next((t for t in TESTS if t in self.model_fields_set), "")


class Rule(BaseModel):
    """`then` (an agent, `stop`, or `agent`: ask the routing agent) when every condition of
    `when` holds; a rule without `when` always matches (it must be the last)."""

    model_config = _Strict

    when: Condition | tuple[Condition, ...] | None = None
    then: str = Field(min_length=1, max_length=40)
    reason: str | None = Field(default=None, max_length=300)
    """What the decision records as its reason (default: the rule's number and test)."""

    def conditions(self) -> tuple[Condition, ...]:
        """Its conditions, all of which must hold (none: always)."""
        if self.when is None:
            return ()
        return self.when if isinstance(self.when, tuple) else (self.when,)


class RulesRouter(BaseModel):
    """Ordered rules over the state and the last result; the first that matches decides, and
    none matching stops the network. `model` is the routing agent's, for `then: agent`."""

    model_config = _Strict

    kind: Literal["rules"]
    rules: tuple[Rule, ...] = Field(min_length=1, max_length=100)
    model: str | None = Field(default=None, min_length=1, max_length=200)

    @field_validator("rules")
    @classmethod
    def _nothing_after_a_catch_all(cls, rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
        for index, rule in enumerate(rules[:-1]):
            if rule.when is None:
                raise ValueError(f"rule {index + 1} has no `when`: the rules after it never run")
        return rules

    def hands_over(self) -> bool:
        """True when some rule asks the routing agent."""
        return any(rule.then == HAND_OVER for rule in self.rules)


class SequenceRouter(BaseModel):
    """The agents of `order`, one after another, then stop."""

    model_config = _Strict

    kind: Literal["sequence"]
    order: tuple[str, ...] = Field(min_length=1, max_length=50)


class PythonRouter(BaseModel):
    """A router the operator registered in trusted code (`@router(name)`), by name."""

    model_config = _Strict

    kind: Literal["python"]
    name: str = Field(pattern=NAME_PATTERN.pattern)


class FunctionRouter(BaseModel):
    """A router the agent wrote: the durable function `id` of the workspace's `functions/`
    folder, invoked for each decision where the sidecar serves it (never in the fleet's
    processes: `harness.agent.networks.function_router`)."""

    model_config = _Strict

    kind: Literal["function"]
    id: str = Field(pattern=FUNCTION_ID_PATTERN)


class AgentRouter(BaseModel):
    """A routing agent: a model call (the fleet's model, or `model`) that picks the next agent
    or stops, with its reason."""

    model_config = _Strict

    kind: Literal["agent"]
    model: str | None = Field(default=None, min_length=1, max_length=200)


Router = Annotated[
    RulesRouter | SequenceRouter | PythonRouter | FunctionRouter | AgentRouter,
    Field(discriminator="kind"),
]


class NetworkSpec(BaseModel):
    """One network. `instructions` is the file's body: the routing agent's brief (and what
    each agent is told the network is for)."""

    model_config = _Strict

    name: str = Field(pattern=NAME_PATTERN.pattern)
    description: str = Field(min_length=1, max_length=1_000)
    agents: tuple[str, ...] = Field(min_length=1, max_length=20)
    router: Router
    state: dict[str, Any] = Field(default_factory=lambda: dict(ANY_OBJECT))
    max_iterations: int = Field(default=10, ge=1, le=50)
    bindings: tuple[Binding, ...] = ()
    """Chats whose messages this network answers (as an agent's `bindings:`; the operator's
    `AGENT_BINDINGS` win at equal specificity: `harness.agent.roster.bindings`)."""
    instructions: str = ""
    path: str = ""
    """The file it came from, workspace-relative (`networks/<name>.md`)."""

    @field_validator("agents")
    @classmethod
    def _names(cls, agents: tuple[str, ...]) -> tuple[str, ...]:
        for name in agents:
            if name in RESERVED:
                raise ValueError(f"{name!r} is a router word (stop, agent, none), not an agent")
        if len(set(agents)) != len(agents):
            raise ValueError("an agent is named twice")
        return agents

    @field_validator("state")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        # Imported here: only a network that declares a state needs it, and every command
        # that lists functions, agents or networks imports this module (~0.1 s, ~3 MB)
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a JSON Schema: {exc.message}") from exc
        if schema.get("type") != "object":
            raise ValueError("the state is an object: its schema needs `type: object`")
        return schema

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())


Loc = tuple[str | int, ...]


def unknown_references(spec: NetworkSpec) -> list[tuple[Loc, str]]:
    """Where the router names an agent that is not one of the network's, and what is wrong
    there: (the key path in the front matter, the message). Empty when every name is known."""
    known = set(spec.agents)
    found: list[tuple[Loc, str]] = []
    router = spec.router
    if isinstance(router, SequenceRouter):
        for index, name in enumerate(router.order):
            if name not in known:
                found.append((("router", "order", index), _not_in(name, spec)))
    elif isinstance(router, RulesRouter):
        for index, rule in enumerate(router.rules):
            if rule.then not in known | {STOP, HAND_OVER}:
                message = f"then: {_not_in(rule.then, spec)}, `stop` nor `agent`"
                found.append((("router", "rules", index, "then"), message))
            for condition in rule.conditions():
                last = condition.last_agent
                if last is not None and last not in known | {FIRST}:
                    found.append((("router", "rules", index, "when"), _not_in(last, spec)))
    return found


def _not_in(name: str, spec: NetworkSpec) -> str:
    return f"{name!r} is not one of the network's agents ({', '.join(spec.agents)})"
