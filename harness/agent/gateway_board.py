"""The offloaded calls as the model gateway (`harness.agent.gateway`) speaks to them: one
async face (`GatewayBoard`) over the gateway loop's own async Redis client or, for a runtime
without one, the blocking `CallBoard`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from harness.runtime.calls import CallBoard, TakenCall
from harness.runtime.kicker import Kick


class GatewayBoard(Protocol):
    """The calls as a gateway sees them: `AsyncCallBoard` (`harness.runtime.calls`) on the
    gateway loop's own async client, or `BlockingBoard` for a runtime without one."""

    async def wait(self, service: str, timeout_s: float) -> bool: ...
    async def take(
        self, service: str, owner: str, now_ms: int, lease_ms: int, limit: int
    ) -> list[TakenCall]: ...
    async def keep(
        self, service: str, now_ms: int, lease_ms: int, held: list[tuple[str, str]]
    ) -> list[int]: ...
    async def stops(self) -> int: ...
    async def settle(
        self, call_id: str, token: str, outcome: dict[str, Any], now_ms: int, template: str = ""
    ) -> tuple[bool, tuple[Kick, ...]]: ...
    async def due(self, service: str, now_ms: int) -> int: ...
    async def beat(self, service: str, gateway: str, now_ms: int) -> None: ...
    async def leave(self, service: str, gateway: str) -> None: ...
    async def aclose(self) -> None: ...


@dataclass
class BlockingBoard:
    """`CallBoard` behind `GatewayBoard`'s async face, for a runtime with no async client (some
    tests): each call blocks the loop (short scripts), and `wait` is a pause of at most
    `poll_s` (a poll)."""

    calls: CallBoard
    poll_s: float

    async def wait(self, service: str, timeout_s: float) -> bool:
        await asyncio.sleep(min(timeout_s, self.poll_s))
        return False

    async def take(
        self, service: str, owner: str, now_ms: int, lease_ms: int, limit: int
    ) -> list[TakenCall]:
        return self.calls.take(service, owner, now_ms, lease_ms, limit)

    async def keep(
        self, service: str, now_ms: int, lease_ms: int, held: list[tuple[str, str]]
    ) -> list[int]:
        return self.calls.keep(service, now_ms, lease_ms, held)

    async def stops(self) -> int:
        return self.calls.stops()

    async def settle(
        self, call_id: str, token: str, outcome: dict[str, Any], now_ms: int, template: str = ""
    ) -> tuple[bool, tuple[Kick, ...]]:
        return self.calls.settle(call_id, token, outcome, now_ms, template)

    async def due(self, service: str, now_ms: int) -> int:
        return self.calls.due(service, now_ms)

    async def beat(self, service: str, gateway: str, now_ms: int) -> None:
        self.calls.beat(service, gateway, now_ms)

    async def leave(self, service: str, gateway: str) -> None:
        self.calls.leave(service, gateway)

    async def aclose(self) -> None:
        return None
