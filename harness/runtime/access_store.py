"""Who may talk to the agent: approved chats and users, and pending pairing codes, in Redis.

A stranger who writes to the bot gets a short one-time code; the owner approves it from the
command line (`harness pair approve CODE`). Approvals survive restarts; codes expire after
`CODE_TTL_S`. Subjects are opaque strings chosen by the caller, such as `telegram:chat:42` or
`slack:user:U123`. Each method is one round trip, and `approve` / `deny` are atomic: a code
is used at most once (`lua/pairing_decide.lua`).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from harness.runtime import scripts
from harness.runtime.bus_errors import on_bus
from harness.runtime.instance import Runtime

CODE_TTL_S = 3600
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or retyped
CODE_LENGTH = 6


@dataclass(frozen=True)
class PairingRequest:
    """A pending code: who asked (`subject`), a label to show the owner (name, chat title),
    the channel it came from and when the code stops working (ms since the epoch)."""

    code: str
    subject: str
    label: str
    channel: str
    created_ms: int
    expires_ms: int


@dataclass(frozen=True)
class Grant:
    """An approved subject, with when and how it was approved."""

    subject: str
    label: str
    approved_ms: int
    via: str


class AccessStore:
    """Approvals, denials and pairing codes under the runtime's key prefix."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        prefix = runtime.keys.prefix
        self._codes = f"{prefix}:access:codes"
        self._approved = f"{prefix}:access:approved"
        self._denied = f"{prefix}:access:denied"
        self._pending = f"{prefix}:access:pending:"
        self._decide = scripts.load(runtime.redis, "pairing_decide")

    @on_bus("reach the pairing records")
    def allowed(self, subjects: list[str]) -> bool:
        """True when any of `subjects` is approved."""
        if not subjects:
            return False
        return any(self._runtime.redis.hmget(self._approved, subjects))

    @on_bus("reach the pairing records")
    def denied(self, subject: str) -> bool:
        """True when the owner denied `subject`: it gets no more codes."""
        return bool(self._runtime.redis.hexists(self._denied, subject))

    @on_bus("reach the pairing records")
    def request(self, subject: str, label: str, channel: str) -> tuple[PairingRequest, bool]:
        """The pending code for `subject`, creating one if it has none that is still valid.

        Returns the request and whether it is new (a caller sends the code only when it is,
        so a stranger who keeps writing gets one reply per hour, not one per message).
        """
        redis = self._runtime.redis
        now = self._runtime.now_ms()
        existing = redis.get(self._pending + subject)
        if existing:
            raw = redis.hget(self._codes, existing)
            if raw:
                found = _request(str(existing), json.loads(raw))
                if found.expires_ms > now:
                    return found, False
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        request = PairingRequest(code, subject, label, channel, now, now + CODE_TTL_S * 1000)
        body = json.dumps(
            {
                "subject": subject,
                "label": label,
                "channel": channel,
                "created_ms": request.created_ms,
                "expires_ms": request.expires_ms,
            }
        )
        pipe = redis.pipeline(transaction=True)
        pipe.hset(self._codes, code, body)
        pipe.set(self._pending + subject, code, ex=CODE_TTL_S)
        pipe.execute()
        return request, True

    @on_bus("reach the pairing records")
    def pending(self) -> list[PairingRequest]:
        """Every code that has not expired, oldest first. Expired codes are dropped."""
        redis = self._runtime.redis
        now = self._runtime.now_ms()
        live: list[PairingRequest] = []
        expired: list[PairingRequest] = []
        for code, raw in redis.hgetall(self._codes).items():
            request = _request(str(code), json.loads(raw))
            (live if request.expires_ms > now else expired).append(request)
        if expired:
            redis.hdel(self._codes, *[r.code for r in expired])
        return sorted(live, key=lambda r: r.created_ms)

    @on_bus("reach the pairing records")
    def approve(self, code: str) -> PairingRequest | None:
        """Approve the subject behind `code` and use the code up. None when the code is unknown
        or expired (an expired code is removed)."""
        return self._settle(code, "approve")

    @on_bus("reach the pairing records")
    def deny(self, code: str) -> PairingRequest | None:
        """Deny the subject behind `code`: no more codes for it until `revoke`. None when the
        code is unknown or expired."""
        return self._settle(code, "deny")

    @on_bus("reach the pairing records")
    def grant(self, subject: str, label: str, via: str) -> None:
        """Approve `subject` directly (an allowlist, or the owner naming it)."""
        body = json.dumps({"label": label, "approved_ms": self._runtime.now_ms(), "via": via})
        pipe = self._runtime.redis.pipeline(transaction=True)
        pipe.hset(self._approved, subject, body)
        pipe.hdel(self._denied, subject)
        pipe.execute()

    @on_bus("reach the pairing records")
    def approved(self) -> list[Grant]:
        """Every approved subject, sorted."""
        grants = []
        for subject, raw in self._runtime.redis.hgetall(self._approved).items():
            info = json.loads(raw)
            label, via = str(info.get("label", "")), str(info.get("via", ""))
            grants.append(Grant(str(subject), label, int(info["approved_ms"]), via))
        return sorted(grants, key=lambda g: g.subject)

    @on_bus("reach the pairing records")
    def revoke(self, subject: str) -> bool:
        """Forget an approval or a denial of `subject`. True when there was one."""
        pipe = self._runtime.redis.pipeline(transaction=True)
        pipe.hdel(self._approved, subject)
        pipe.hdel(self._denied, subject)
        removed = pipe.execute()
        return any(removed)

    def _settle(self, code: str, verdict: str) -> PairingRequest | None:
        code = code.strip().upper()
        now = self._runtime.now_ms()
        raw = self._decide(
            keys=[self._codes, self._approved, self._denied, self._pending],
            args=[code, now, verdict],
        )
        return _request(code, json.loads(raw)) if raw else None


def _request(code: str, body: dict[str, object]) -> PairingRequest:
    return PairingRequest(
        code=code,
        subject=str(body["subject"]),
        label=str(body.get("label", "")),
        channel=str(body.get("channel", "")),
        created_ms=int(str(body["created_ms"])),
        expires_ms=int(str(body["expires_ms"])),
    )
