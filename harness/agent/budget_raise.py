"""Raising a used-up budget from the chat: the owner is asked once per scope and day.

When a turn stops at 100% of a scope's limit (`harness.agent.budget_gate`), the gate's step
notes the first stop of that scope today (`SpendStore.first_notice(..., "asked")`) and sends
`agent.budget.exhausted` (`BudgetExhausted`). `agent-budget-raise` answers it: it asks the
owner in their direct chat (`approvals.owner_request.request_owner`, the owner alone may
answer) "Raise <scope> budget for today by <amount> (the same amount again)?", waits durably
(`wait_for_owner`), and on approval raises the limit for that day (`budget_limits.raise_today`,
the same seam as `harness budget raise`) and tells the chat it may go on. A denial, the
timeout or no owner known change nothing: the limit holds until tomorrow (UTC) or a raise
from the CLI. Every effect is a step, so a replay neither asks nor raises twice.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from harness.agent.approvals.lines import decision_line
from harness.agent.approvals.owner_request import request_owner, wait_for_owner
from harness.agent.budget_limits import Standing, raise_today
from harness.agent.deps import agent_deps
from harness.agent.proactive import send_reply
from harness.events import ApprovalClosed, EventData, ReplyTarget
from harness.records.spend import Scope, spend_store
from harness.runtime import Context, event, function

BUDGET_EXHAUSTED = "agent.budget.exhausted"
BUDGET_RAISE_FUNCTION = "agent-budget-raise"
RAISING = ("approve", "session")
"""The owner's answers that raise (for a budget, "for this session" means "yes")."""


class BudgetExhausted(EventData):
    """Data of `agent.budget.exhausted`: scope `scope` `id` used up its `unit` limit on UTC
    `day`; `amount` is the raise to ask for (the limit the settings give, so "the same amount
    again"); `reply` is the chat the stopped turn answers in (None: nowhere to tell), and
    `session_key` its session (shown to the owner)."""

    event_name: ClassVar[str] = BUDGET_EXHAUSTED

    day: str
    scope: Scope
    id: str
    unit: Literal["usd", "tokens"]
    amount: float
    reply: ReplyTarget | None = None
    session_key: str | None = None

    @classmethod
    def of(
        cls, day: str, over: Standing, amount: float, reply: ReplyTarget | None
    ) -> BudgetExhausted:
        """The event data for `over`, used up on `day`, asking to raise it by `amount`."""
        return cls(
            day=day, scope=over.scope, id=over.id, unit="usd" if over.unit == "usd" else "tokens",
            amount=amount, reply=reply, session_key=reply.session_key if reply else None,
        )  # fmt: skip

    def amount_text(self) -> str:
        """`$5.00` or `200,000 tokens`."""
        return f"${self.amount:.2f}" if self.unit == "usd" else f"{int(self.amount):,} tokens"

    def question(self) -> str:
        """What the owner is asked."""
        return (
            f"Today's budget of {self.scope} {self.id} is used up, so its turns stop before "
            f"calling the model. Raise {self.scope} {self.id}'s budget for today ({self.day}, "
            f"UTC) by {self.amount_text()} (the same amount again)?"
        )


def raised_text(data: BudgetExhausted) -> str:
    """What the chat is told once the owner raised its budget."""
    return (
        f"The owner raised today's budget by {data.amount_text()}: you can go on, send your "
        "message again."
    )


@function(id=BUDGET_RAISE_FUNCTION, trigger=event(BUDGET_EXHAUSTED), retries=3)
def ask_to_raise(ctx: Context) -> dict[str, Any]:
    """Ask the owner to raise the used-up budget for the day; raise it and tell the chat on
    approval; nothing else otherwise (see the module)."""
    data = BudgetExhausted.from_event(ctx.event)
    settings = agent_deps().settings
    asked = request_owner(
        ctx, settings, title="budget", summary=data.question(), session_key=data.session_key
    )
    if asked is None:
        return {"raised": False, "why": "no owner known"}
    claim = wait_for_owner(ctx, asked)
    expired = f"⌛ Expired: nobody answered within {settings.agent_approval_timeout}."
    line = expired if claim.state == "expired" else decision_line(claim.state, claim.by, claim.at)
    closed = ApprovalClosed(approval_id=asked.approval_id, reason=line)  # the buttons go
    ctx.step.send_event(
        "approval-closed", closed.to_event(id=f"approval-closed-{asked.approval_id}")
    )
    if claim.state not in RAISING:
        return {"raised": False, "why": claim.state or claim.outcome}
    usd, tokens = (data.amount, 0) if data.unit == "usd" else (0.0, int(data.amount))

    def raise_it() -> bool:
        raise_today(spend_store(ctx.runtime), data.day, data.scope, data.id, usd=usd, tokens=tokens)
        return True

    ctx.step.run("raise", raise_it)
    send_reply(ctx, raised_text(data), data.reply)
    return {"raised": True, "by": claim.by}


__all__ = ["BUDGET_EXHAUSTED", "BUDGET_RAISE_FUNCTION", "BudgetExhausted", "ask_to_raise"]
