"""The console's health page: live processes from their presence beats, queue depth, the
sidecar's load errors, undelivered replies and model calls waiting for a gateway; a Redis
outage is a 503 page, not a 500."""

from __future__ import annotations

from harness.agent.model_calls import MODEL_SERVICE
from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Runtime
from harness.runtime.function_sources import FILE_SOURCE, LoadError, replace_source
from harness.runtime.functions import FunctionRegistry
from harness.runtime.presence import beat
from tests.runtime_fixtures import ManualClock
from tests.web.console_client import signed_in, soup, with_bearer
from tests.web.parked_calls import park_a_model_call


def test_health_page_shows_workers_queues_load_errors_and_undelivered(runtime: Runtime) -> None:
    # Given a worker beating, a file that failed to load, and one undelivered reply
    beat(runtime, "worker", ("harness",))
    replace_source(runtime, FILE_SOURCE, {}, [LoadError(file="bad.py", line=3, error="boom")])
    redis_records(runtime).undelivered.record(
        UndeliveredReply(reply_id="r", run_id="x", channel="telegram", chat_id="1", at_ms=1)
    )
    # When the health page is opened
    page = soup(signed_in(runtime), "/dashboard/health")
    # Then it shows one worker, no scheduler or sidecar, the queue, the error and the reply
    assert page.select_one("#workers-alive").get_text() == "1 worker(s)"  # type: ignore[union-attr]
    assert "not running" in page.select_one("#scheduler-alive").get_text()  # type: ignore[union-attr]
    assert "not running" in page.select_one("#sidecar-alive").get_text()  # type: ignore[union-attr]
    (member,) = page.select("#processes tr[data-member]")
    assert "worker" in member.get_text() and "harness" in member.get_text()
    assert page.select('#queues tr[data-queue="harness"]'), page.select("#queues")
    assert "bad.py:3: boom" in page.select_one("#load-errors").get_text()  # type: ignore[union-attr]
    assert "1 undelivered reply" in page.select_one("#undelivered-count").get_text()  # type: ignore[union-attr]


def test_health_page_says_redis_is_down_with_a_503(unreachable_runtime: Runtime) -> None:
    # Given a fleet whose Redis does not answer, When the page is opened with the key
    client = with_bearer(unreachable_runtime)
    response = client.get("/dashboard/health")
    # Then it is a page saying so, 503, naming no host or password
    assert response.status_code == 503, response.text
    assert "Redis does not answer" in response.text and "ConnectionError" in response.text


def test_health_page_says_model_calls_wait_with_no_live_gateway(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run parked on a model call 20 s ago, and no model gateway alive
    park_a_model_call(runtime, registry)
    clock.advance(20)
    # When the health page is opened
    page = soup(signed_in(runtime), "/dashboard/health")
    # Then it shows the call waiting, its age, and that no gateway will make it
    calls = page.select_one("#model-calls").get_text()  # type: ignore[union-attr]
    assert "1 model call(s) waiting (oldest 20.0 s), 0 in flight" in calls, calls
    assert "no live model gateway" in calls, calls


def test_health_page_counts_a_live_gateway_as_serving_the_calls(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a model call waiting and a gateway that beats
    park_a_model_call(runtime, registry)
    runtime.calls.beat(MODEL_SERVICE, "gateway:1", runtime.now_ms())
    # When the health page is opened
    page = soup(signed_in(runtime), "/dashboard/health")
    # Then the gateway is counted and nothing is said to be stranded
    alive = page.select_one("#gateways-alive").get_text()  # type: ignore[union-attr]
    assert alive == "1 model gateway(s) alive", alive
