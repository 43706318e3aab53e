"""`harness pair`: the owner lets people talk to the bot (`DM_POLICY=pairing`).

harness pair list            pending codes, and who is approved
harness pair approve CODE    serve whoever got CODE
harness pair deny CODE       refuse them: no more codes for them
harness pair revoke SUBJECT  forget an approval or a denial

Each takes `--json`: `list` prints `{"pending": [PairingRequest...], "approved": [Grant...]}`,
`approve` and `deny` the request they decided, `revoke` `{"subject", "revoked": true}`. An
unknown code or subject exits 4 (not found), one line on stderr.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from harness.commands.exit_codes import NOT_FOUND
from harness.commands.one_line_errors import fail
from harness.commands.output import JsonOption, emit_json, print_rows

if TYPE_CHECKING:  # the stores load the Redis client: not for `harness pair --help`
    from harness.records.pairing import AccessStore, PairingRequest

pair_app = typer.Typer(help="Let people talk to the bot: pairing codes and approvals.")


def _store() -> AccessStore:
    from harness.records.stores import redis_records
    from harness.runtime import get_runtime

    return redis_records(get_runtime()).pairing


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M")


@pair_app.command("list")
def pair_list(as_json: JsonOption = False) -> None:
    """Show pending pairing codes and approved chats and users."""
    store = _store()
    pending, approved = store.pending(), store.approved()
    if as_json:
        emit_json({"pending": pending, "approved": approved})
        return
    if not pending and not approved:
        typer.echo("no pairing requests and no approvals yet")
        return
    if pending:
        rows = [[r.code, r.label, r.subject, _when(r.expires_ms)] for r in pending]
        print_rows(["code", "who", "subject", "expires"], rows, 1, title="pending")
    if approved:
        rows = [[g.subject, g.label, _when(g.approved_ms), g.via] for g in approved]
        print_rows(["subject", "who", "approved", "how"], rows, 1, title="approved")


def _decided(request: PairingRequest | None, code: str, verb: str, as_json: bool) -> None:
    if request is None:
        raise fail([f"no pending code {code.upper()!r} (wrong, used or expired)"], NOT_FOUND)
    if as_json:
        emit_json(request)
        return
    typer.echo(f"{verb} {request.subject} ({request.label or 'no name'})")


@pair_app.command("approve")
def pair_approve(
    code: Annotated[str, typer.Argument(help="The code the person was sent.")],
    as_json: JsonOption = False,
) -> None:
    """Serve whoever was sent CODE from now on."""
    _decided(_store().approve(code), code, "approved", as_json)


@pair_app.command("deny")
def pair_deny(
    code: Annotated[str, typer.Argument(help="The code the person was sent.")],
    as_json: JsonOption = False,
) -> None:
    """Refuse whoever was sent CODE: they get no more codes until revoked."""
    _decided(_store().deny(code), code, "denied", as_json)


@pair_app.command("revoke")
def pair_revoke(
    subject: Annotated[str, typer.Argument(help="As shown by `harness pair list`.")],
    as_json: JsonOption = False,
) -> None:
    """Forget the approval (or denial) of SUBJECT."""
    if not _store().revoke(subject):
        raise fail([f"{subject!r} is neither approved nor denied"], NOT_FOUND)
    if as_json:
        emit_json({"subject": subject, "revoked": True})
        return
    typer.echo(f"revoked {subject}")
