"""Running suites: repeats, processes in parallel, and the report built from the attempts."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from harness.evals.runner import eval_redis, run_suites
from harness.evals.suite import Case, Suite
from harness.evals.summary import build_report
from harness.settings import Settings
from tests.agent.conftest import user_texts
from tests.fakes.model_server import ModelServer, Reply


def _echo_case(word: str) -> Case:
    return Case.model_validate(
        {
            "id": f"say-{word}",
            "messages": [f"Say {word}."],
            "expect": {"answer": {"contains": [word]}},
        }
    )


def _echo(api: str, body: Any) -> Reply:
    """Answers the word the last user message asks for (whichever case sent it)."""
    return Reply.answer(user_texts(body)[-1].removeprefix("Say ").rstrip("."))


def test_parallel_repeats_run_every_case_in_processes(
    model_server: ModelServer, eval_settings: Settings, redis_url: str
) -> None:
    # Given two cases answered by a model that echoes each case's word
    model_server.respond_with(_echo)
    suite = Suite(name="echo", cases=[_echo_case("alpha"), _echo_case("beta")])
    # When they run twice each, two at a time in processes
    attempts = run_suites([suite], eval_settings, redis_url, repeat=2, parallel=2)
    # Then all four attempts passed, in case then repeat order, and the report counts them
    assert [(a.case, a.repeat, a.passed) for a in attempts] == [
        ("say-alpha", 0, True), ("say-alpha", 1, True),
        ("say-beta", 0, True), ("say-beta", 1, True),
    ]  # fmt: skip
    report = build_report("m", "now", 2, attempts)
    assert [(c.case, c.runs, c.pass_rate) for c in report.cases] == [
        ("say-alpha", 2, 1.0), ("say-beta", 2, 1.0),
    ]  # fmt: skip
    assert report.total.input_tokens == 400


def test_without_redis_url_cases_get_a_temporary_redis(eval_settings: Settings) -> None:
    # Given settings without REDIS_URL
    settings = eval_settings.model_copy(update={"redis_url": None})
    # When the eval's Redis is opened, then closed
    with eval_redis(settings) as url:
        client = redis.Redis.from_url(url)
        answered = client.ping()
        client.close()
    # Then it answered while open, and is gone after
    assert answered
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
