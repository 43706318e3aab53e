"""`RATE_LIMIT_PER_MINUTE`: a person who sends more messages a minute than that is told once
to slow down, and the messages over the limit are not served (not saved, no turn), instead
of queueing without end behind the chat's running turn.

Checked when a message is accepted (after `DM_POLICY`, before the turn), in a durable step
("rate") so a replay decides the same. The owner is exempt: their own entry points (no
`Asker`: `harness chat`, `send`, the API) and their messages in any chat (`harness.owner`).
Messages with no person (a function's own) are never limited. Counts are
`harness.records.rate`.
"""

from __future__ import annotations

from harness.agent.proactive import send_reply
from harness.agent.speakers import person_of
from harness.events import MessageReceived, ReplyTarget
from harness.owner import find_owner, speaks_as_owner
from harness.records.stores import redis_records
from harness.runtime.steps import Context
from harness.settings import Settings


def slow_down_text(limit: int) -> str:
    """The one reply a person over the limit gets in a minute."""
    per = "message" if limit == 1 else "messages"
    return (
        f"Slow down a little, please: I take {limit} {per} a minute from each person. "
        "I skipped what you sent just now; send it again in a minute."
    )


def within_rate(
    ctx: Context, settings: Settings, data: MessageReceived, target: ReplyTarget
) -> bool:
    """True when `data` may be served; False (having told `target` to slow down, the first
    time in the minute) when its sender is over `RATE_LIMIT_PER_MINUTE`. No step and no Redis
    call when the setting is unset or the message has no asker."""
    limit, asker = settings.rate_limit_per_minute, data.channel_meta.asker
    person = person_of(data)
    if limit is None or asker is None or person is None:
        return True

    def count() -> int:
        records = redis_records(ctx.runtime)
        if speaks_as_owner(find_owner(settings.agent_owner, records.pairing), asker):
            return 0
        return records.rates.hit(person, ctx.runtime.now_ms())

    sent = int(ctx.step.run("rate", count))
    if sent <= limit:
        return True
    if sent == limit + 1:
        send_reply(ctx, slow_down_text(limit), target)
    return False
