"""`harness pair`: the owner lets people talk to the bot (`DM_POLICY=pairing`).

harness pair list            pending codes, and who is approved
harness pair approve CODE    serve whoever got CODE
harness pair deny CODE       refuse them: no more codes for them
harness pair revoke SUBJECT  forget an approval or a denial
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from harness.errors import HarnessError
from harness.records.pairing import AccessStore
from harness.records.stores import redis_records

pair_app = typer.Typer(help="Let people talk to the bot: pairing codes and approvals.")
_out = Console()
_err = Console(stderr=True)


def _store() -> AccessStore:
    from harness.runtime import get_runtime

    try:
        return redis_records(get_runtime()).pairing
    except HarnessError as exc:
        _err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(code=1) from exc


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M")


@pair_app.command("list")
def pair_list() -> None:
    """Show pending pairing codes and approved chats and users."""
    store = _store()
    pending, approved = store.pending(), store.approved()
    if not pending and not approved:
        _out.print("no pairing requests and no approvals yet")
        return
    if pending:
        table = Table("code", "who", "subject", "expires", title="pending", title_justify="left")
        for request in pending:
            table.add_row(request.code, request.label, request.subject, _when(request.expires_ms))
        _out.print(table)
    if approved:
        table = Table("subject", "who", "approved", "how", title="approved", title_justify="left")
        for grant in approved:
            table.add_row(grant.subject, grant.label, _when(grant.approved_ms), grant.via)
        _out.print(table)


@pair_app.command("approve")
def pair_approve(
    code: Annotated[str, typer.Argument(help="The code the person was sent.")],
) -> None:
    """Serve whoever was sent CODE from now on."""
    request = _store().approve(code)
    if request is None:
        _err.print(f"no pending code {code.upper()!r} (wrong, used or expired)")
        raise typer.Exit(code=1)
    _out.print(f"approved {request.subject} ({request.label or 'no name'})")


@pair_app.command("deny")
def pair_deny(code: Annotated[str, typer.Argument(help="The code the person was sent.")]) -> None:
    """Refuse whoever was sent CODE: they get no more codes until revoked."""
    request = _store().deny(code)
    if request is None:
        _err.print(f"no pending code {code.upper()!r} (wrong, used or expired)")
        raise typer.Exit(code=1)
    _out.print(f"denied {request.subject} ({request.label or 'no name'})")


@pair_app.command("revoke")
def pair_revoke(
    subject: Annotated[str, typer.Argument(help="As shown by `harness pair list`.")],
) -> None:
    """Forget the approval (or denial) of SUBJECT."""
    if not _store().revoke(subject):
        _err.print(f"{subject!r} is neither approved nor denied")
        raise typer.Exit(code=1)
    _out.print(f"revoked {subject}")
