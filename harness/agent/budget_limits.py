"""Daily budgets: the limits the operator set, what today's spend says about them, and the
owner's raise for the day.

Limits come from settings (`BUDGET_DAILY_USD_PER_PERSON`, `..._PER_CHAT`, `..._PER_AGENT` and
the `BUDGET_DAILY_TOKENS_PER_...` three); unset is no limit. A limit raised for the day
(`raise_today`: `harness budget raise`, or an owner's approval in the chat) is the setting
plus the raise. `judge` is pure: from today's spend it says whether the next model call may
run (under 100% of every limit) and which scopes are at 80% or more (warned once a day, by
the gate). Spend is `harness.records.spend`; the check before each call is
`harness.agent.budget_gate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from harness.records.spend import SCOPES, Scope, ScopeId, ScopeSpend, SpendStore
from harness.settings import Settings

WARN_AT = 0.8
"""The share of a limit at which the chat is told, once a day per scope."""

_WHOSE = {"person": "you", "chat": "this chat", "agent": "agent {id}"}


@dataclass(frozen=True)
class BudgetLimits:
    """The daily limits per scope: USD and tokens (None: no limit of that kind)."""

    usd: dict[Scope, float | None]
    tokens: dict[Scope, int | None]

    @classmethod
    def from_settings(cls, settings: Settings) -> BudgetLimits:
        """The limits `settings` set."""
        s = settings
        return cls(
            usd={"person": s.budget_daily_usd_per_person, "chat": s.budget_daily_usd_per_chat,
                 "agent": s.budget_daily_usd_per_agent},
            tokens={"person": s.budget_daily_tokens_per_person,
                    "chat": s.budget_daily_tokens_per_chat,
                    "agent": s.budget_daily_tokens_per_agent},
        )  # fmt: skip

    def any(self) -> bool:
        """True when at least one limit is set (else no budget is ever checked)."""
        return any(v is not None for v in (*self.usd.values(), *self.tokens.values()))

    def limited(self, scopes: Sequence[ScopeId]) -> list[ScopeId]:
        """Those of `scopes` that have a limit, in order."""
        return [s for s in scopes if self.usd[s[0]] is not None or self.tokens[s[0]] is not None]


class Standing(BaseModel, frozen=True):
    """One limit of one scope today: what was spent of how much (raises included)."""

    scope: Scope
    id: str
    unit: str  # "usd" or "tokens"
    spent: float
    limit: float

    @property
    def share(self) -> float:
        """Spent over limit (1.0 = used up)."""
        return self.spent / self.limit if self.limit > 0 else 1.0

    def amount(self) -> str:
        """The limit as a person reads it: `$2.00` or `200,000 tokens`."""
        return f"${self.limit:.2f}" if self.unit == "usd" else f"{int(self.limit):,} tokens"

    def whose(self) -> str:
        """`you`, `this chat` or `agent researcher`."""
        return _WHOSE[self.scope].format(id=self.id)


def standings(limits: BudgetLimits, spends: Sequence[ScopeSpend]) -> list[Standing]:
    """Every set limit of each scope in `spends`, against what it spent today."""
    found: list[Standing] = []
    for s in spends:
        usd, tokens = limits.usd[s.scope], limits.tokens[s.scope]
        if usd is not None:
            found.append(Standing(scope=s.scope, id=s.id, unit="usd", spent=s.usd,
                                  limit=usd + s.raised_usd))  # fmt: skip
        if tokens is not None:
            found.append(Standing(scope=s.scope, id=s.id, unit="tokens", spent=s.tokens,
                                  limit=tokens + s.raised_tokens))  # fmt: skip
    return found


def used_up_text(standing: Standing) -> str:
    """What the chat is told when `standing` stopped a turn."""
    return (
        f"Today's budget for {standing.whose()} ({standing.amount()}) is used up, so I stopped "
        "before calling the model again. The owner can raise it for today: they are asked in "
        "their chat (once a day), or can run "
        f"`harness budget raise {standing.scope} {standing.id} AMOUNT`."
    )


def warning_text(standing: Standing) -> str:
    """What the chat is told, once a day, when `standing` passed `WARN_AT`."""
    return (
        f"Heads up: {round(standing.share * 100)}% of today's budget for {standing.whose()} "
        f"({standing.amount()}) is spent. At 100% I stop until tomorrow (UTC) or until the "
        "owner raises it."
    )


def judge(
    limits: BudgetLimits, spends: Sequence[ScopeSpend]
) -> tuple[Standing | None, list[Standing]]:
    """The first limit used up (None: the call may run) and every limit at `WARN_AT` or more
    but not used up, at most one per scope."""
    found = standings(limits, spends)
    over = next((s for s in found if s.share >= 1.0), None)
    near: dict[ScopeId, Standing] = {}
    for s in found:
        if WARN_AT <= s.share < 1.0:
            near.setdefault((s.scope, s.id), s)
    return over, list(near.values())


def raise_today(
    store: SpendStore, day: str, scope: Scope, ident: str, *, usd: float = 0.0, tokens: int = 0
) -> ScopeSpend:
    """Raise `scope` `ident`'s limits for UTC `day` only, by `usd` and `tokens` (added to what
    the settings allow and any earlier raise that day); returns the scope's day after it. The
    seam for both raises: `harness budget raise`, and an owner's approval from the chat.
    Raises ValueError for an unknown scope or a negative amount."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}: use person, chat or agent")
    if usd < 0 or tokens < 0:
        raise ValueError("a raise cannot be negative")
    store.raise_limit(day, (scope, ident), usd=usd, tokens=tokens)
    return store.read(day, [(scope, ident)])[0]
