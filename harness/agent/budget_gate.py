"""The check before every model call: a turn within its daily budgets calls the model, one
past them ends with a clear message instead (`harness.agent.budget_limits`).

`BudgetGate.wrap(think)` is the loop's `think` behind the gate. Before each call a durable
step ("budget") reads today's spend of the turn's scopes (the person who wrote, the chat, the
agent), judges it, and notes which scopes pass 80% for the first time today; a replay reads
the step's verdict, so a warning is sent once and a stopped turn stops the same way. At 100%
the wrapped `think` answers the stop text itself, as a model turn with no tool calls: the
loop ends as after any answer, and no model call is made; the first stop of a scope each day
in a turn with a chat also asks the owner to raise it (`agent.budget.exhausted`, answered by
`harness.agent.budget_raise`). After each call that ran, a second
step ("spend") adds its cost (list prices, `harness.llm.pricing`) and tokens to every scope.

`budget_gate` builds none when no limit is set (or none of the turn's scopes has one): the
turn then makes no extra step and no Redis call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from harness.agent.budget_limits import BudgetLimits, Standing, judge, used_up_text, warning_text
from harness.agent.budget_raise import BudgetExhausted
from harness.agent.loop import Think
from harness.agent.proactive import send_reply
from harness.agent.turn import DurableTurn
from harness.events import ReplyTarget
from harness.llm.pricing import known_cost_usd
from harness.llm.types import AssistantTurn, Message, ToolSpec, Usage
from harness.records.spend import ScopeId, SpendStore, spend_store
from harness.records.usage import utc_day
from harness.runtime.steps import Context
from harness.settings import Settings

STOPPED_MODEL = "budget"
"""The `model` of the turn that answers instead of the model when a budget is used up."""


def stopped(turn: AssistantTurn) -> bool:
    """True when `turn` is the gate's stop turn, not a model's answer."""
    return turn.model == STOPPED_MODEL


class Verdict(BaseModel, frozen=True):
    """What the check before a model call decided: `stop`, the text that ends the turn (None:
    call the model), the warnings to send now (each scope's first of the day), and `ask`, the
    owner's raise to ask for (a scope's first stop of the day)."""

    stop: str | None = None
    warnings: list[str] = []
    ask: BudgetExhausted | None = None


class BudgetGate:
    """The budgets of one turn: `scopes` are the turn's (person, chat, agent) that have a
    limit; `notify` sends a warning into the chat (it must be idempotent across replays, as
    `proactive.send_reply` is); None where there is no chat to tell (the heartbeat). `reply`
    is that chat, told when the owner raises a used-up budget (None: the owner is not asked)."""

    def __init__(
        self,
        ctx: Context,
        store: SpendStore,
        limits: BudgetLimits,
        scopes: Sequence[ScopeId],
        notify: Callable[[str], None] | None,
        reply: ReplyTarget | None = None,
    ) -> None:
        self.ctx = ctx
        self.store = store
        self.limits = limits
        self.scopes = list(scopes)
        self.notify = notify
        self.reply = reply

    def guard(self, call: Callable[[], AssistantTurn]) -> AssistantTurn:
        """`call()` (one model call) when today's budgets allow it, its spend then added; the
        stop turn (`stopped`) without calling it when one is used up."""
        stop = self.check()
        if stop is not None:
            return AssistantTurn(text=stop, stop_reason="end", model=STOPPED_MODEL)
        turn = call()
        self.count(turn.model, turn.usage)
        return turn

    def check(self) -> str | None:
        """The check before one model call (step "budget"): sends the warnings due and asks
        the owner on a scope's first stop of the day; returns the text that stops the turn,
        or None when the call may run. For a caller that is not a `think` (the network's
        routing agent); then `count` the call."""
        verdict = Verdict.model_validate(self.ctx.step.run("budget", self._check))
        for text in verdict.warnings:
            if self.notify is not None:
                self.notify(text)
        if verdict.ask is not None:
            self.ctx.step.send_event("budget-exhausted", verdict.ask.to_event())
        return verdict.stop

    def count(self, model: str, usage: Usage) -> None:
        """Add one call's cost and tokens to every scope (step "spend")."""
        self.ctx.step.run("spend", self._add, model, usage.model_dump())

    def allow(self, call: Callable[[], AssistantTurn]) -> AssistantTurn | None:
        """`guard` for a call that is not the loop's `think` (a summary, the memory flush):
        None instead of the stop turn (`DurableTurn.guard`)."""
        turn = self.guard(call)
        return None if stopped(turn) else turn

    def wrap(self, think: Think) -> Think:
        """`think` behind the gate (see the module docstring)."""

        def gated(
            messages: Sequence[Message], tools: Sequence[ToolSpec], note: str
        ) -> AssistantTurn:
            return self.guard(lambda: think(messages, tools, note))

        return gated

    def _day(self) -> str:
        return utc_day(self.ctx.runtime.now_ms())

    def _check(self) -> dict[str, object]:
        day = self._day()
        over, near = judge(self.limits, self.store.read(day, self.scopes))
        if over is not None:
            return Verdict(stop=used_up_text(over), ask=self._ask(day, over)).model_dump()
        # with nobody to tell (a heartbeat), a warning is left for the next turn that can
        fresh = [
            s for s in near
            if self.notify is not None and self.store.first_notice(day, (s.scope, s.id))
        ]  # fmt: skip
        return Verdict(warnings=[warning_text(s) for s in fresh]).model_dump()

    def _ask(self, day: str, over: Standing) -> BudgetExhausted | None:
        """The owner's raise to ask for: `over`'s setting again, the first stop of its scope
        today in a turn with a chat; None otherwise."""
        if self.reply is None or not self.store.first_notice(day, (over.scope, over.id), "asked"):
            return None
        limits = self.limits.usd if over.unit == "usd" else self.limits.tokens
        return BudgetExhausted.of(day, over, float(limits[over.scope] or 0), self.reply)

    def _add(self, model: str, raw: dict[str, int]) -> bool:
        u = Usage.model_validate(raw)
        tokens = u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens
        usd = known_cost_usd(model, u) or 0.0  # an unpriced model counts in tokens only
        self.store.add(self._day(), self.scopes, usd=usd, tokens=tokens)
        return True


def budget_gate(
    ctx: Context,
    settings: Settings,
    store: Callable[[], SpendStore],
    scopes: Sequence[ScopeId],
    notify: Callable[[str], None] | None,
    reply: ReplyTarget | None = None,
) -> BudgetGate | None:
    """The gate of a turn with `scopes`, or None when none of them has a limit. `store` is
    called only when a gate is built."""
    limits = BudgetLimits.from_settings(settings)
    limited = limits.limited(scopes) if limits.any() else []
    if not limited:
        return None
    return BudgetGate(ctx, store(), limits, limited, notify, reply)


def gated_think(turn: DurableTurn, chat: str | None, person: str | None) -> Think:
    """`turn.think` behind the budgets of `person` (the sender, `speakers.person_of`; None:
    unknown), `chat` (a session key; None: none) and the turn's agent; warnings go where the
    turn replies (or asks, for a sub-agent that returns its answer). `turn.think` itself
    when no limit applies; else the turn's other model calls go behind the gate too
    (`DurableTurn.guard`)."""
    scopes = turn_scopes(person, chat, turn.profile.name)
    where = turn.reply or turn.ask_in
    gate = budget_gate(
        turn.ctx, turn.deps.settings, lambda: spend_store(turn.ctx.runtime), scopes,
        lambda text: send_reply(turn.ctx, text, where), where,
    )  # fmt: skip
    if gate is None:
        return turn.think
    turn.guard = gate.allow  # the turn's summaries and memory flush are checked and counted
    return gate.wrap(turn.think)


def turn_scopes(person: str | None, chat: str | None, agent: str) -> list[ScopeId]:
    """The scopes a turn's spend counts toward: the person (when known), the chat (when it has
    a session) and the agent (its roster name, `main` for the default agent)."""
    scopes: list[ScopeId] = []
    if person:
        scopes.append(("person", person))
    if chat:
        scopes.append(("chat", chat))
    scopes.append(("agent", agent))
    return scopes
