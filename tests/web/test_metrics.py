"""`GET /metrics`: the fleet's numbers, read from Redis at scrape time, in the Prometheus text
format; `GET /livez` answers without Redis."""

from __future__ import annotations

from dataclasses import replace

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Context, NonRetriableError, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.presence import beat
from harness.runtime.scheduler import reap_once
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from tests.runtime_fixtures import ManualClock
from tests.web.parked_calls import park_a_model_call

MODEL_ANSWER: dict[str, object] = {
    "model": "claude-sonnet-5",
    "usage": {"input_tokens": 1_000_000, "output_tokens": 100_000},
    "text": "hi",
}


def scrape(
    client: TestClient, **headers: str
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of one scrape, by name and sorted labels."""
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _go(runtime: Runtime, data: dict[str, str] | None = None) -> None:
    runtime.register_functions()
    publish({"name": "app/go", "data": data or {}}, runtime=runtime)


def test_metrics_count_runs_started_and_finished_per_function(
    client: TestClient, runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given one function that completes and one that fails, both fired by one event
    @function(id="fine", trigger=event("app/go"), registry=registry)
    def fine(ctx: Context) -> str:
        return "ok"

    @function(id="broken", trigger=event("app/go"), registry=registry)
    def broken(ctx: Context) -> None:
        raise NonRetriableError("no")

    _go(runtime)
    drain(runtime)
    # When Prometheus scrapes
    samples = scrape(client)
    # Then each function's runs are counted by how they ended
    assert samples[("harness_runs_started_total", (("function", "fine"),))] == 1
    assert samples[("harness_runs_started_total", (("function", "broken"),))] == 1
    assert (
        samples[("harness_runs_finished_total", (("function", "fine"), ("status", "completed")))]
        == 1
    )
    assert (
        samples[("harness_runs_finished_total", (("function", "broken"), ("status", "failed")))]
        == 1
    )
    assert samples[("harness_runs", (("status", "completed"),))] == 1
    assert samples[("harness_redis_up", ())] == 1


def test_metrics_histogram_step_durations_and_count_model_tokens_and_cost(
    client: TestClient, runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a function whose model step takes two seconds by the runtime's clock
    def think() -> dict[str, object]:
        clock.advance(2)
        return MODEL_ANSWER

    @function(id="thinker", trigger=event("app/go"), registry=registry)
    def thinker(ctx: Context) -> None:
        ctx.step.run("think", think)

    _go(runtime, {"session_key": "telegram:424242"})
    drain(runtime)
    # When Prometheus scrapes
    response = client.get("/metrics")
    samples = scrape(client)
    # Then the step lands in the 2.5 s bucket, not the 1 s one
    fn = ("function", "thinker")
    assert samples[("harness_step_duration_seconds_bucket", (fn, ("le", "1.0")))] == 0
    assert samples[("harness_step_duration_seconds_bucket", (fn, ("le", "2.5")))] == 1
    assert samples[("harness_step_duration_seconds_count", (fn,))] == 1
    assert samples[("harness_step_duration_seconds_sum", (fn,))] == 2.0
    # And the tokens and their list-price cost (2 + 1 USD) are counted per model
    model = ("model", "claude-sonnet-5")
    assert samples[("harness_model_tokens_total", (("kind", "input"), model))] == 1_000_000
    assert samples[("harness_model_tokens_total", (("kind", "output"), model))] == 100_000
    assert samples[("harness_model_calls_total", (model,))] == 1
    assert samples[("harness_model_cost_usd_total", (model,))] == 3.0
    # And no label names the chat
    assert "424242" not in response.text


def test_metrics_count_lease_expiries_and_resent_kicks(
    client: TestClient, runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose worker died holding it, and a run whose kick the broker lost
    @function(id="noop", trigger=event("app/go"), registry=registry)
    def noop(ctx: Context) -> None:
        return None

    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    _go(runtime)
    dead = kicker.pending.popleft()
    runtime.ledger.claim(dead.run_id, "dead-worker", runtime.now_ms(), 10_000, 250, dead.seq)
    publish({"name": "app/go", "id": "lost"}, runtime=runtime)
    kicker.pending.clear()
    # When the scheduler reaps after the lease ran out
    clock.advance(11)
    reap_once(runtime)
    # Then both recoveries are counted
    samples = scrape(client)
    assert samples[("harness_lease_expiries_total", ())] == 1
    assert samples[("harness_kicks_resent_total", ())] == 1


def test_metrics_report_queue_depth_undelivered_replies_and_live_processes(
    client: TestClient, runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two queued runs, one undelivered reply, two live workers and a scheduler
    @function(id="noop", trigger=event("app/go"), registry=registry)
    def noop(ctx: Context) -> None:
        return None

    _go(runtime)
    publish({"name": "app/go", "id": "second"}, runtime=runtime)
    redis_records(runtime).undelivered.record(
        UndeliveredReply(reply_id="r1", run_id="run-1", channel="telegram", chat_id="777")
    )
    beat(replace(runtime, worker_id="w1"), "worker")
    beat(replace(runtime, worker_id="w2"), "worker")
    beat(replace(runtime, worker_id="s1"), "scheduler")
    # When Prometheus scrapes
    samples = scrape(client)
    # Then the gauges say so
    assert samples[("harness_queue_depth", (("queue", "harness"),))] == 2
    assert samples[("harness_runs", (("status", "queued"),))] == 2
    assert samples[("harness_undelivered_replies", ())] == 1
    assert samples[("harness_live_processes", (("role", "worker"),))] == 2
    assert samples[("harness_live_processes", (("role", "scheduler"),))] == 1


def test_metrics_report_model_calls_waiting_their_age_and_the_live_gateways(
    client: TestClient, runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run parked on a model call 30 s ago, and no model gateway alive
    park_a_model_call(runtime, registry)
    clock.advance(30)
    # When Prometheus scrapes
    samples = scrape(client)
    # Then the call is due, 30 s old, and no gateway beats to make it
    model = ("service", "model")
    assert samples[("harness_offloaded_calls", (model, ("state", "due")))] == 1
    assert samples[("harness_offloaded_calls", (model, ("state", "in_flight")))] == 0
    assert samples[("harness_offloaded_call_oldest_due_seconds", (model,))] == 30
    assert samples[("harness_call_gateways_alive", (model,))] == 0
    # When a gateway beats
    runtime.calls.beat("model", "gateway:1", runtime.now_ms())
    # Then it is counted
    assert scrape(client)[("harness_call_gateways_alive", (model,))] == 1


def test_metrics_require_the_metrics_token_when_one_is_set(
    runtime: Runtime, settings: Settings
) -> None:
    # Given METRICS_TOKEN is set
    secured = settings.model_copy(update={"metrics_token": SecretStr("scrape-token-123")})
    with TestClient(create_app(lambda: runtime, secured)) as client:
        # When a scraper comes without it, or with a wrong one, it is refused
        assert client.get("/metrics").status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert client.get("/metrics", headers=wrong).status_code == 401
        # And with it, it is served
        right = {"Authorization": "Bearer scrape-token-123"}
        assert client.get("/metrics", headers=right).status_code == 200


def test_metrics_say_redis_is_down_instead_of_failing(
    unreachable_runtime: Runtime, settings: Settings
) -> None:
    # Given Redis does not answer
    with TestClient(create_app(lambda: unreachable_runtime, settings)) as client:
        # When Prometheus scrapes
        samples = scrape(client)
    # Then the scrape succeeds and says only that Redis is down
    assert samples == {("harness_redis_up", ()): 0}


def test_livez_answers_while_redis_is_down(
    unreachable_runtime: Runtime, settings: Settings
) -> None:
    # Given Redis does not answer (so /healthz is 503)
    with TestClient(create_app(lambda: unreachable_runtime, settings)) as client:
        # When the liveness probe asks
        response = client.get("/livez")
    # Then the process says it is alive
    assert response.status_code == 200
    assert response.json() == {"status": "alive"}
