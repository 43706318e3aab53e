"""Secrets are masked wherever people look (issue 26, finding 7).

A run recorded by a process that did not know the fleet's secrets (an old record, or a worker
whose settings missed one) holds the Redis password, a webhook secret and the API key in its
trigger, a step's output and its error. `harness runs`, `runs show` and `runs show --json`,
each in a fresh process that learns the secrets only from its own settings reading (REDIS_URL
in the environment, the rest in the project's `.env`), and the dashboard's run page, built by
an app that reads its own settings, show none of them. A password the shell prints reaches
neither the model nor the run's records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from harness.fleet.embedded_redis import EmbeddedRedis
from harness.redaction import MASK
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings, get_settings
from harness.settings_errors import read_settings
from harness.web import create_app
from harness.web.dashboard import router as dashboard_router
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock
from tests.secrets_registry import forget_registered_secrets
from tests.security.conftest import Attack

PASSWORD = "Rp-4f1c9e2a7b3d5608"
WEBHOOK_SECRET = "WhSec4f1c9e2a7b3d5608"
API_KEY = "HkKey-4f1c9e2a7b3d5608"
SECRETS = (PASSWORD, WEBHOOK_SECRET, API_KEY)
CLI_TIMEOUT_S = 120


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The project folder: its `.env` holds the webhook secret and the API key; no secret is
    registered yet in this process, and the process settings are read afresh."""
    (tmp_path / ".env").write_text(
        f"TELEGRAM_WEBHOOK_SECRET={WEBHOOK_SECRET}\nHARNESS_API_KEY={API_KEY}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    forget_registered_secrets(monkeypatch)
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real Redis that requires `PASSWORD` (as the embedded one does), and its URL."""
    with EmbeddedRedis(tmp_path / "redis", persist=False, password=PASSWORD) as server:
        yield server.url


def _leaky_run(url: str, registry: FunctionRegistry, clock: ManualClock) -> str:
    """A failed run whose trigger, step output and error hold every secret and the Redis URL,
    recorded by this process while it knows none of them. Returns its id."""
    # The password first: `harness runs` shows an error's first 60 characters.
    leak = f"{PASSWORD} webhook {WEBHOOK_SECRET} key {API_KEY} url {url}"

    def fail() -> None:
        raise RuntimeError(leak)

    @function(id="leaky", trigger=event("test/leak"), retries=0, registry=registry)
    def leaky(ctx: Context) -> None:
        ctx.step.run("print", lambda: f"printed {leak}")
        ctx.step.run("fail", fail)

    client = redis.Redis.from_url(url, decode_responses=True)
    runtime = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, clock=clock)
    runtime.register_functions()
    run_id = publish({"name": "test/leak", "data": {"note": leak}}, runtime=runtime).run_ids[0]
    drain(runtime)
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "failed", record
    assert PASSWORD in record.error, "the record should hold the secrets, as an old one does"
    return run_id


def _harness(project: Path, url: str, *args: str) -> str:
    """`harness ARGS` in a fresh process run from the project folder, REDIS_URL set."""
    env = {**os.environ, "REDIS_URL": url}
    done = subprocess.run(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _assert_masked(shown: str, where: str) -> None:
    for secret in SECRETS:
        assert secret[:8] not in shown, f"{where} shows (part of) {secret!r}:\n{shown}"
    # (the list cuts an error at 60 characters, the mask's "]" with it)
    assert MASK[:-1] in shown, f"{where} masks nothing; did it show the run?\n{shown}"


def test_secrets_are_masked_in_runs_show_and_its_json_and_the_run_list(
    project: Path, redis_url: str, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a failed run whose record holds the Redis password, a webhook secret and the key
    run_id = _leaky_run(redis_url, registry, clock)
    # When a person looks at it with the CLI, each command a fresh process
    shown = _harness(project, redis_url, "runs", "show", run_id)
    as_json = _harness(project, redis_url, "runs", "show", run_id, "--json")
    listed = _harness(project, redis_url, "runs")
    # Then the run is there, and none of the secrets
    assert run_id in shown and json.loads(as_json)["run"]["id"] == run_id and run_id in listed
    _assert_masked(shown, "runs show")
    _assert_masked(as_json, "runs show --json")
    _assert_masked(listed, "runs")


def test_secrets_are_masked_on_the_dashboards_run_page(
    project: Path,
    redis_url: str,
    registry: FunctionRegistry,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the same run, and a web app that reads its own settings (REDIS_URL, .env)
    run_id = _leaky_run(redis_url, registry, clock)
    monkeypatch.setenv("REDIS_URL", redis_url)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    runtime = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, clock=clock)
    app = create_app(lambda: runtime, routers=[dashboard_router])
    # When a signed-in person opens the run's page and its live fragment
    with TestClient(app) as web:
        signed_in = {"Authorization": f"Bearer {API_KEY}"}
        page = web.get(f"/dashboard/runs/{run_id}", headers=signed_in)
        live = web.get(f"/dashboard/runs/{run_id}/live", headers=signed_in)
    # Then the run is shown, without the secrets
    assert page.status_code == 200 and run_id in page.text, page.text
    _assert_masked(page.text, "the run page")
    _assert_masked(live.text, "the run page's live fragment")


def test_a_password_the_shell_prints_reaches_neither_the_model_nor_the_records(
    attack: Attack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a worker that read its settings (the Redis URL with its password), and the
    # password lying in a workspace file a person once pasted it into
    forget_registered_secrets(monkeypatch)
    monkeypatch.setenv("REDIS_URL", f"redis://:{PASSWORD}@127.0.0.1:6379/0")
    read_settings(Settings)
    (attack.workspace / "notes.txt").write_text(f"the redis password is {PASSWORD}\n")
    # When the attacker's model reads the file and has the shell print it, and Alice approves
    attack.model.script(
        Reply.tool("read", {"path": "notes.txt"}),
        Reply.tool("bash", {"command": "cat notes.txt; grep -r password . 2>/dev/null"}),
        Reply.answer("done"),
    )
    run_id = attack.say("what is in my notes?")
    attack.press("approve")
    # Then both tools ran, and the password is in no request to the model and no step record
    results = attack.tool_results()
    assert any("the redis password is" in result for result in results), results
    for request in attack.model.requests:
        assert PASSWORD not in json.dumps(request.body), "the password reached the model"
    journal = json.dumps(attack.runtime.ledger.journal(run_id))
    assert PASSWORD not in journal and MASK in journal, journal
