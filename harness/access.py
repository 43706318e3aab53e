"""Who the agent serves: the `DM_POLICY` gate in front of every chat turn.

Channels describe who wrote, in `channel_meta.asker` (see `harness.addresses.Asker`), from
a verified payload: the subjects the message speaks for (the chat, the user), the one to pair
when a code is needed, a label for the owner, and whether a configured allowlist names it.
Messages without that description come from the owner's own entry points (`harness chat`,
`harness send`, the API behind `HARNESS_API_KEY`) and are always served.

    open       serve everyone (logged loudly at start-up and shown by `harness doctor`)
    allowlist  serve only what TELEGRAM_ALLOWED_CHATS / SLACK_ALLOWED_CHANNELS name
    pairing    the default: the allowlist, plus what the owner approved with
               `harness pair approve CODE`; anyone else gets one short code per hour and
               nothing else (no model call, no tool, nothing saved to a session)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pydantic import BaseModel

from harness.addresses import Asker
from harness.records.pairing import CODE_TTL_S
from harness.runtime import Runtime
from harness.settings import DmPolicy

if TYPE_CHECKING:
    from harness.records.stores import Records

log = logging.getLogger(__name__)

PAIRING_TEXT = (
    "Hi! I don't know you yet. To talk to me, ask my owner to run:\n\n"
    "    harness pair approve {code}\n\n"
    "The code works for {minutes} minutes."
)


class Admission(BaseModel):
    """The gate's verdict for one message: serve it, or not (and the code to send, if a new
    one was made)."""

    serve: bool
    code: str | None = None
    reason: str = ""


def admit(
    runtime: Runtime,
    policy: DmPolicy,
    channel: str,
    asker: Asker | None,
    records: Records | None = None,
) -> Admission:
    """Decide whether to serve a message (see the module docstring). Makes a pairing code
    when the policy asks for one; `code` is set only when that code is new, so a stranger
    gets one reply per code. The pairing store is that of `records`, by default the
    runtime's Redis one. Raises on Redis errors (the caller is a durable step)."""
    if asker is None:
        return Admission(serve=True, reason="owner")
    if policy == "open":
        return Admission(serve=True, reason="open policy")
    if asker.allowlisted:
        return Admission(serve=True, reason="allowlist")
    if policy == "allowlist" or not asker.pairing_subject:
        return Admission(serve=False, reason="not in the allowlist")
    store = (records or _redis_records(runtime)).pairing
    if store.allowed(asker.subjects):
        return Admission(serve=True, reason="paired")
    if store.denied(asker.pairing_subject):
        return Admission(serve=False, reason="denied by the owner")
    request, new = store.request(asker.pairing_subject, asker.label, channel)
    if new:
        log.warning(
            "pairing requested by %s (%s): run `harness pair approve %s`",
            asker.pairing_subject,
            asker.label or "no name",
            request.code,
        )
    return Admission(serve=False, code=request.code if new else None, reason="waiting for pairing")


def may_serve(
    runtime: Runtime, policy: DmPolicy, asker: Asker | None, records: Records | None = None
) -> bool:
    """Whether `admit` would serve this sender now, without making a code. For cosmetic
    functions (typing indicators) that must not show a stranger the bot is working."""
    if asker is None or policy == "open" or asker.allowlisted:
        return True
    if policy == "allowlist":
        return False
    return (records or _redis_records(runtime)).pairing.allowed(asker.subjects)


def _redis_records(runtime: Runtime) -> Records:
    # Imported when a sender is checked: every store's module (~10 ms) is not needed to
    # describe the policy (`harness doctor`).
    from harness.records.stores import redis_records

    return redis_records(runtime)


def describe_policy(policy: DmPolicy) -> str:
    """One line saying who the bot serves, for the start-up log and `harness doctor`."""
    if policy == "open":
        return (
            "DM_POLICY=open: ANYONE who finds the bot can talk to it and use its tools; "
            "set DM_POLICY=pairing unless that is what you want"
        )
    if policy == "allowlist":
        return (
            "DM_POLICY=allowlist: only TELEGRAM_ALLOWED_CHATS / SLACK_ALLOWED_CHANNELS are served"
        )
    return "DM_POLICY=pairing: strangers get a code; approve it with `harness pair approve CODE`"


def announce_policy(policy: DmPolicy) -> None:
    """Log `describe_policy` at start-up: a warning when the bot is open to everyone."""
    level = logging.WARNING if policy == "open" else logging.INFO
    log.log(level, "%s", describe_policy(policy))


def pairing_text(code: str) -> str:
    """The one reply a stranger gets: the code and what the owner must run."""
    return PAIRING_TEXT.format(code=code, minutes=CODE_TTL_S // 60)
