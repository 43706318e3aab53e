"""The console's health page: live processes from their presence beats, queue depth, the
sidecar's load errors and undelivered replies; a Redis outage is a 503 page, not a 500."""

from __future__ import annotations

from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Runtime
from harness.runtime.function_sources import FILE_SOURCE, LoadError, replace_source
from harness.runtime.presence import beat
from tests.web.console_client import signed_in, soup, with_bearer


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
