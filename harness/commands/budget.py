"""`harness budget`: today's spend against the daily budgets, and the owner's raise.

harness budget show [--json]                 spend per person, chat and agent, with limits
harness budget raise SCOPE ID AMOUNT         raise a limit for today only (USD; --tokens)

Days are UTC, as the budgets are. The limits are the `BUDGET_DAILY_*` settings of the
process running the command, plus today's raises; see `harness.agent.budget_limits`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from harness.agent.budget_limits import BudgetLimits, raise_today
from harness.commands.output import JsonOption, emit_json, print_rows
from harness.records.spend import SCOPES, ScopeSpend
from harness.records.stores import redis_records
from harness.records.usage import utc_day
from harness.runtime import get_runtime
from harness.settings import get_settings

budget_app = typer.Typer(
    help="Daily budgets: today's spend per person, chat and agent, and raising a limit.",
    no_args_is_help=True,
)


def _row(spend: ScopeSpend, limits: BudgetLimits) -> dict[str, object]:
    """One scope's day with its limits (None: no limit), raises included."""
    usd, tokens = limits.usd[spend.scope], limits.tokens[spend.scope]
    return {
        **spend.model_dump(mode="json"),
        "usd_limit": None if usd is None else round(usd + spend.raised_usd, 6),
        "tokens_limit": None if tokens is None else tokens + spend.raised_tokens,
    }


@budget_app.command("show")
def show(
    as_json: JsonOption = False,
) -> None:
    """Today's (UTC) spend of each person, chat and agent against its daily limits."""
    rt = get_runtime()
    day = utc_day(rt.now_ms())
    limits = BudgetLimits.from_settings(get_settings())
    rows = [_row(s, limits) for s in redis_records(rt).spend.read(day)]
    if as_json:
        emit_json({"day": day, "scopes": rows})
        return
    if not rows:
        typer.echo(f"Nothing spent yet on {day} (UTC).")
        return

    def limit(value: object, money: bool) -> str:
        if value is None:
            return "-"
        return f"${value:.2f}" if money else f"{value:,}"

    table = [
        [str(r["scope"]), str(r["id"]), f"${r['usd']:.4f}", limit(r["usd_limit"], True),
         f"{r['tokens']:,}", limit(r["tokens_limit"], False)]
        for r in rows
    ]  # fmt: skip
    print_rows(["scope", "id", "spent", "limit", "tokens", "token limit"], table, 2)


@budget_app.command("raise")
def raise_limit(
    scope: Annotated[str, typer.Argument(help="person, chat or agent.")],
    ident: Annotated[str, typer.Argument(metavar="ID", help="As `harness budget show` lists it.")],
    amount: Annotated[
        str, typer.Argument(help="USD to add ($ optional), or tokens with --tokens.")
    ],
    tokens: Annotated[bool, typer.Option("--tokens", help="AMOUNT is tokens, not USD.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Raise one person's, chat's or agent's daily limit by AMOUNT, for today (UTC) only.
    `--json`: that scope's day after the raise, as one row of `budget show --json`."""
    if scope not in SCOPES:
        raise typer.BadParameter("SCOPE must be person, chat or agent")
    try:
        value = float(amount.strip().lstrip("$").replace(",", ""))
    except ValueError as exc:
        raise typer.BadParameter(f"AMOUNT must be a number, not {amount!r}") from exc
    if value <= 0:
        raise typer.BadParameter("AMOUNT must be more than 0")
    rt = get_runtime()
    day = utc_day(rt.now_ms())
    usd, count = (0.0, int(value)) if tokens else (value, 0)
    after = raise_today(redis_records(rt).spend, day, scope, ident, usd=usd, tokens=count)
    if as_json:
        emit_json({"day": day, **_row(after, BudgetLimits.from_settings(get_settings()))})
        return
    what = f"{count:,} tokens" if tokens else f"${value:.2f}"
    typer.echo(
        f"Raised {scope} {ident} by {what} for {day} (UTC): raised ${after.raised_usd:.2f} "
        f"and {after.raised_tokens:,} tokens today."
    )
