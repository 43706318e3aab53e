"""Who may open `/dashboard`: Bearer for scripts, the login cookie for people, nobody when
HARNESS_API_KEY is unset."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes


def _client(runtime: Runtime, key: str | None) -> TestClient:
    settings = Settings(_env_file=None, harness_api_key=key)  # type: ignore[call-arg]
    app = create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])
    return TestClient(app, follow_redirects=False)


def test_dashboard_answers_a_bearer_token_and_redirects_strangers(runtime: Runtime) -> None:
    # Given a dashboard behind a key
    client = _client(runtime, "secret-key-1")
    # When a script presents the key, and a stranger presents none
    scripted = client.get("/dashboard", headers={"Authorization": "Bearer secret-key-1"})
    stranger = client.get("/dashboard")
    # Then the script gets the page and the stranger is sent to the login form
    assert scripted.status_code == 200 and 'id="runs"' in scripted.text
    assert stranger.status_code == 303 and stranger.headers["location"] == "/dashboard/login"


def test_dashboard_is_closed_without_an_api_key(runtime: Runtime) -> None:
    # Given no HARNESS_API_KEY / When the dashboard is asked for / Then it is unavailable
    assert _client(runtime, None).get("/dashboard/login").status_code == 503


def test_run_page_shows_the_trigger_event_preview_redacted(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a finished run whose trigger event carries a token
    @function(id="page-trigger", trigger=event("app/page"), registry=registry)
    def page(ctx: Context) -> int:
        return 1

    runtime.register_functions()
    token = "xoxb-123456789012-PAGETOKENsecret"
    data = {"text": f"hello {token}"}
    run_id = publish({"name": "app/page", "data": data}, runtime=runtime).run_ids[0]
    drain(runtime)
    # When its page is opened
    client = _client(runtime, "secret-key-1")
    page_html = client.get(
        f"/dashboard/runs/{run_id}", headers={"Authorization": "Bearer secret-key-1"}
    ).text
    # Then it shows the event's name and data, with the token redacted
    (trigger,) = BeautifulSoup(page_html, "html.parser").select("#trigger")
    assert "app/page" in trigger.text and "hello [REDACTED]" in trigger.text, trigger.text
    assert token not in page_html


def test_run_list_and_its_live_stream_refuse_a_since_that_is_not_a_duration(
    runtime: Runtime,
) -> None:
    # Given a signed-in script / When it asks for runs since "soon"
    client = _client(runtime, "secret-key-1")
    auth = {"Authorization": "Bearer secret-key-1"}
    pages = [client.get(f"/dashboard{path}?since=soon", headers=auth) for path in ("", "/live")]
    # Then both answer 400, saying what is wrong with `since`
    for page in pages:
        assert page.status_code == 400, page.text
        assert "since" in page.text and "soon" in page.text, page.text


def test_run_list_refuses_a_since_too_long_to_count(runtime: Runtime) -> None:
    # Given a signed-in script / When it asks for runs since more days than a float holds
    client = _client(runtime, "secret-key-1")
    auth = {"Authorization": "Bearer secret-key-1"}
    since = "9" * 400 + "d"
    pages = [client.get(f"/dashboard{path}?since={since}", headers=auth) for path in ("", "/live")]
    # Then both answer 400 naming `since`, not a 500
    for page in pages:
        assert page.status_code == 400, page.text
        assert "since" in page.text, page.text
