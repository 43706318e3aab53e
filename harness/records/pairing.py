"""Who may talk to the agent: approved chats and users, and pending pairing codes.

A stranger who writes to the bot gets a short one-time code; the owner approves it from the
command line (`harness pair approve CODE`). Approvals survive restarts; codes expire after
`CODE_TTL_S`. Subjects are opaque strings chosen by the caller, such as `telegram:chat:42` or
`slack:user:U123`. Each method is one round trip, and `approve` / `deny` are atomic: a code
is used at most once (`lua/pairing_decide.lua`). `AccessStore` is the contract,
`RedisAccessStore` the Redis implementation, `MemoryAccessStore` its in-memory twin.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

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


class AccessStore(Protocol):
    """Approvals, denials and pairing codes. A code is spent by its first `approve` or `deny`,
    whatever the answer; an expired code grants nothing. The Redis implementation raises
    `BusUnavailableError` when Redis fails."""

    def allowed(self, subjects: list[str]) -> bool:
        """True when any of `subjects` is approved."""
        ...

    def denied(self, subject: str) -> bool:
        """True when the owner denied `subject`: it gets no more codes."""
        ...

    def request(self, subject: str, label: str, channel: str) -> tuple[PairingRequest, bool]:
        """The pending code for `subject`, creating one if it has none that is still valid,
        and whether it is new (a caller sends the code only when it is)."""
        ...

    def pending(self) -> list[PairingRequest]:
        """Every code that has not expired, oldest first. Expired codes are dropped."""
        ...

    def approve(self, code: str) -> PairingRequest | None:
        """Approve the subject behind `code` (any case, spaces around ignored) and use the
        code up. None when the code is unknown, spent or expired."""
        ...

    def deny(self, code: str) -> PairingRequest | None:
        """Deny the subject behind `code`: no more codes for it until `revoke`. None when the
        code is unknown, spent or expired."""
        ...

    def grant(self, subject: str, label: str, via: str) -> None:
        """Approve `subject` directly (an allowlist, or the owner naming it)."""
        ...

    def approved(self) -> list[Grant]:
        """Every approved subject, sorted."""
        ...

    def revoke(self, subject: str) -> bool:
        """Forget an approval or a denial of `subject`. True when there was one."""
        ...


class RedisAccessStore:
    """`AccessStore` under the runtime's key prefix."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        prefix = runtime.keys.prefix
        self._codes = f"{prefix}:access:codes"
        self._approved = f"{prefix}:access:approved"
        self._denied = f"{prefix}:access:denied"
        self._pending = f"{prefix}:access:pending:"
        self._decide = scripts.load_from(runtime.redis, "harness.records", "pairing_decide")

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
        request = _new_request(subject, label, channel, now)
        code = request.code
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


def _new_request(subject: str, label: str, channel: str, now_ms: int) -> PairingRequest:
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return PairingRequest(code, subject, label, channel, now_ms, now_ms + CODE_TTL_S * 1000)


class MemoryAccessStore:
    """`AccessStore` in one process's memory, for tests: the same answers as
    `RedisAccessStore`, codes expiring by `clock` (seconds since the epoch)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._codes: dict[str, PairingRequest] = {}
        self._approved: dict[str, Grant] = {}
        self._denied: set[str] = set()

    def _now(self) -> int:
        return int(self._clock() * 1000)

    def allowed(self, subjects: list[str]) -> bool:
        """See `AccessStore.allowed`."""
        return any(subject in self._approved for subject in subjects)

    def denied(self, subject: str) -> bool:
        """See `AccessStore.denied`."""
        return subject in self._denied

    def request(self, subject: str, label: str, channel: str) -> tuple[PairingRequest, bool]:
        """See `AccessStore.request`."""
        now = self._now()
        for found in self._codes.values():
            if found.subject == subject and found.expires_ms > now:
                return found, False
        request = _new_request(subject, label, channel, now)
        self._codes[request.code] = request
        return request, True

    def pending(self) -> list[PairingRequest]:
        """See `AccessStore.pending`."""
        now = self._now()
        for code in [c for c, r in self._codes.items() if r.expires_ms <= now]:
            del self._codes[code]
        return sorted(self._codes.values(), key=lambda r: r.created_ms)

    def approve(self, code: str) -> PairingRequest | None:
        """See `AccessStore.approve`."""
        return self._settle(code, "approve")

    def deny(self, code: str) -> PairingRequest | None:
        """See `AccessStore.deny`."""
        return self._settle(code, "deny")

    def _settle(self, code: str, verdict: str) -> PairingRequest | None:
        """What `lua/pairing_decide.lua` does: spend the code, then answer unless expired."""
        code = code.strip().upper()
        request = self._codes.pop(code, None)
        now = self._now()
        if request is None or request.expires_ms < now:
            return None
        if verdict == "approve":
            grant = Grant(request.subject, request.label, now, f"code {code}")
            self._approved[request.subject] = grant
            self._denied.discard(request.subject)
        else:
            self._denied.add(request.subject)
        return request

    def grant(self, subject: str, label: str, via: str) -> None:
        """See `AccessStore.grant`."""
        self._approved[subject] = Grant(subject, label, self._now(), via)
        self._denied.discard(subject)

    def approved(self) -> list[Grant]:
        """See `AccessStore.approved`."""
        return sorted(self._approved.values(), key=lambda g: g.subject)

    def revoke(self, subject: str) -> bool:
        """See `AccessStore.revoke`."""
        had = subject in self._approved or subject in self._denied
        self._approved.pop(subject, None)
        self._denied.discard(subject)
        return had
