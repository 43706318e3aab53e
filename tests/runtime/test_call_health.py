"""Whether offloaded calls are being served (`calls_waiting`): how many wait, the oldest's
age, and the gateways that beat."""

from __future__ import annotations

from typing import Any

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.call_health import calls_waiting
from harness.runtime.calls import GATEWAY_TTL_S
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock

LEASE_MS = 5000


def _asker(runtime: Runtime, registry: FunctionRegistry) -> None:
    @function(id="asker", trigger=event("app/ask"), registry=registry)
    def asker(ctx: Context) -> Any:
        return ctx.step.run("ask", lambda: ctx.step.offload("echo", '{"q": 1}'))

    runtime.register_functions()


def _parked_asks(runtime: Runtime, count: int) -> None:
    for _ in range(count):
        publish({"name": "app/ask"}, runtime=runtime)
    drain(runtime)


def test_calls_waiting_with_no_gateway_are_stranded_with_the_oldest_age(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given two runs parked on calls, the first 30 s before the second, and no gateway
    _asker(runtime, registry)
    _parked_asks(runtime, 1)
    clock.advance(30)
    _parked_asks(runtime, 1)
    clock.advance(15)
    # When the calls' health is read
    waiting = calls_waiting(runtime, "echo")
    # Then both are due, the oldest has waited 45 s, and nothing serves them
    assert (waiting.due, waiting.in_flight, waiting.gateways) == (2, 0, 0)
    assert waiting.oldest_due_s == 45.0
    assert waiting.stranded


def test_a_beating_gateway_is_alive_until_its_beat_ages_out(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a call due and a gateway that beats
    _asker(runtime, registry)
    _parked_asks(runtime, 1)
    runtime.calls.beat("echo", "gw-1", runtime.now_ms())
    # Then the call is not stranded
    assert calls_waiting(runtime, "echo").gateways == 1
    assert not calls_waiting(runtime, "echo").stranded
    # When the gateway stops beating for longer than the TTL
    clock.advance(GATEWAY_TTL_S + 1)
    # Then it is gone, and the call is stranded
    assert calls_waiting(runtime, "echo").gateways == 0
    assert calls_waiting(runtime, "echo").stranded


def test_a_call_in_flight_is_not_due_and_a_gateway_that_leaves_is_gone_at_once(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two calls due, one of them taken by a beating gateway
    _asker(runtime, registry)
    _parked_asks(runtime, 2)
    runtime.calls.beat("echo", "gw-1", runtime.now_ms())
    assert len(runtime.calls.take("echo", "gw-1", runtime.now_ms(), LEASE_MS, 1)) == 1
    # Then one is due, one in flight
    waiting = calls_waiting(runtime, "echo")
    assert (waiting.due, waiting.in_flight, waiting.gateways) == (1, 1, 1)
    # When the gateway leaves (it stopped)
    runtime.calls.leave("echo", "gw-1")
    # Then no gateway is alive
    assert calls_waiting(runtime, "echo").gateways == 0


def test_a_beat_forgets_gateways_long_gone(runtime: Runtime, clock: ManualClock) -> None:
    # Given a gateway that beat once, long ago (a worker since restarted)
    runtime.calls.beat("echo", "gw-old", runtime.now_ms())
    clock.advance(7 * GATEWAY_TTL_S)
    # When another gateway beats
    runtime.calls.beat("echo", "gw-new", runtime.now_ms())
    # Then only the live one is kept: restarts do not pile up
    kept = runtime.redis.zrange(runtime.keys.call_gateways("echo"), 0, -1)
    assert kept == ["gw-new"], kept
