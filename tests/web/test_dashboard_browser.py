"""`/dashboard` in a real headless Chromium (Debian's, through Selenium): the login, the run
list, a run page with its steps, a live run updating without a reload, and a screenshot."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes
from tests.waiting import wait_until
from tests.web.served import served

KEY = "dashboard-test-key-123"
CHROMIUM = "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(DRIVER).exists()),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium-driver)",
)


@pytest.fixture
def rt(redis_client: redis.Redis, registry: FunctionRegistry) -> Runtime:
    """A drainable runtime on a real Redis (the server thread and the test share it)."""
    return Runtime(redis=redis_client, kicker=RecordingKicker(), registry=registry)


@pytest.fixture
def site(rt: Runtime) -> Iterator[str]:
    """The dashboard served by uvicorn on a free port; yields its base URL."""
    settings = Settings(_env_file=None, harness_api_key=KEY)  # type: ignore[call-arg]
    app = create_app(lambda: rt, settings=settings, routers=[dashboard_routes.router])
    with served(app) as base:
        yield base


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    """Headless Chromium from the system packages; nothing is downloaded."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage", "--window-size=1280,900",
    ):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    yield driver
    driver.quit()


def _sign_in(browser: webdriver.Chrome, site: str) -> None:
    browser.get(f"{site}/dashboard")
    browser.find_element(By.ID, "key").send_keys(KEY)
    browser.find_element(By.ID, "sign-in").click()
    wait_until(lambda: browser.find_elements(By.ID, "runs"), "the run list after signing in")


def test_dashboard_login_rejects_a_wrong_key_and_accepts_the_right_one(
    site: str, browser: webdriver.Chrome
) -> None:
    # Given the dashboard, not signed in
    browser.get(f"{site}/dashboard")
    # When a wrong key is given
    browser.find_element(By.ID, "key").send_keys("wrong-key")
    browser.find_element(By.ID, "sign-in").click()
    # Then the form says so, and no run list is shown
    (error,) = wait_until(
        lambda: browser.find_elements(By.ID, "login-error"), "the login form's error"
    )
    assert "not right" in error.text
    assert browser.find_elements(By.ID, "runs") == []
    # When the right key is given, Then the run list loads, with an HTTP-only cookie
    _sign_in(browser, site)
    cookie = browser.get_cookie("harness_dashboard")
    assert cookie is not None and cookie["httpOnly"], cookie


def test_dashboard_lists_runs_and_updates_a_live_run_without_reload(
    site: str, browser: webdriver.Chrome, rt: Runtime, registry: FunctionRegistry, tmp_path: Path
) -> None:
    # Given a run whose second step waits for the test
    release = threading.Event()

    @function(id="two-phase", trigger=event("app/two"), retries=0, registry=registry)
    def two_phase(ctx: Context) -> str:
        ctx.step.run("prepare", lambda: {"ready": True})
        return str(ctx.step.run("finish", lambda: release.wait(30) and "finished"))

    rt.register_functions()
    run_id = publish({"name": "app/two", "data": {}}, runtime=rt).run_ids[0]
    worker = threading.Thread(target=drain, args=(rt,), daemon=True)
    worker.start()
    wait_until(lambda: "prepare:0" in rt.ledger.journal(run_id), "the first step to finish")
    # When the run list and then the run's page are opened
    _sign_in(browser, site)
    assert run_id in browser.find_element(By.ID, "runs").text
    browser.find_element(By.LINK_TEXT, run_id).click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-step]"), "the steps")
    # Then it shows the first step, with the run still running
    assert browser.find_element(By.ID, "status").text == "running"
    assert "prepare:0" in browser.find_element(By.ID, "steps").text
    browser.execute_script("window.notReloaded = true;")
    # When the run finishes
    release.set()
    worker.join(timeout=30)
    # Then the page shows the new step and the final status, without reloading
    wait_until(
        lambda: browser.find_element(By.ID, "status").text == "completed",
        "the status to turn completed",
    )
    assert "finish:0" in browser.find_element(By.ID, "steps").text
    assert browser.execute_script("return window.notReloaded === true;"), "the page reloaded"
    assert browser.save_screenshot(str(tmp_path / "run.png"))
    assert (tmp_path / "run.png").stat().st_size > 1000


def test_run_list_shows_new_runs_and_status_changes_without_reload(
    site: str, browser: webdriver.Chrome, rt: Runtime, registry: FunctionRegistry
) -> None:
    # Given the run list open in the browser, and a function whose step waits for the test
    release = threading.Event()

    @function(id="list-live", trigger=event("app/list"), retries=0, registry=registry)
    def list_live(ctx: Context) -> str:
        return str(ctx.step.run("hold", lambda: release.wait(30) and "done"))

    rt.register_functions()
    _sign_in(browser, site)
    browser.execute_script("window.notReloaded = true;")

    def status_cell(run_id: str) -> str:
        # Read in one script call: the rows are replaced as updates arrive, so an element
        # found first and read after could already be gone (stale).
        script = (
            "var c = document.querySelector('tr[data-run=\"' + arguments[0] + '\"] td.status');"
            "return c ? c.textContent : '';"
        )
        return str(browser.execute_script(script, run_id))

    # When a run starts
    run_id = publish({"name": "app/list", "data": {}}, runtime=rt).run_ids[0]
    worker = threading.Thread(target=drain, args=(rt,), daemon=True)
    worker.start()
    # Then its row appears, running
    wait_until(lambda: status_cell(run_id) == "running", "the new run's row, running")
    # When it finishes
    release.set()
    worker.join(timeout=30)
    # Then its row turns completed, and the page never reloaded
    wait_until(lambda: status_cell(run_id) == "completed", "the row to turn completed")
    assert browser.execute_script("return window.notReloaded === true;"), "the page reloaded"
