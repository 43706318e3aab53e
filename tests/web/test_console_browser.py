"""The console's charts, actions and health pages in a real headless Chromium (the fixtures
of `test_dashboard_browser`): what a person sees, at 1280 and at 420 px wide."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from channels.approvals import answer_approval
from harness.records.stores import redis_records
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.presence import beat
from harness.runtime.testing import drain
from tests.waiting import wait_until
from tests.web.test_dashboard_browser import (  # noqa: F401  (fixtures)
    _sign_in,
    browser,
    pytestmark,
    rt,
    site,
)

# ruff: noqa: F811  (the fixtures above are used by name)

FITS_SCRIPT = "return [document.documentElement.scrollWidth, window.innerWidth];"


@pytest.fixture
def worker(rt: Runtime) -> Iterator[None]:
    """A worker thread that keeps advancing whatever is kicked, until the test ends."""
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            drain(rt)
            stop.wait(0.05)  # a worker's poll interval, not a wait on the test's outcome

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=10)


def _waiting_for_approval(
    rt: Runtime, registry: FunctionRegistry, approvers: tuple[str, ...] = ()
) -> str:
    """A run that opened approval request `ap-1` (for `approvers`; by default anyone at the
    owner's entry points may answer) and waits for its answer, as the agent's approval gate
    does."""

    @function(id="asks", trigger=event("app/ask"), retries=0, registry=registry)
    def asks(ctx: Context) -> str:
        store = redis_records(ctx.runtime).approvals
        ctx.step.run("open", lambda: store.open("ap-1", list(approvers), None, ctx.run_id))
        answer = ctx.step.wait_for_event("answer", event="agent.approval.answered",
                                         match="data.approval_id", timeout="1h")  # fmt: skip
        return "timed out" if answer is None else str(answer.data["decision"])

    registry.register(answer_approval)
    rt.register_functions()
    run_id = publish({"name": "app/ask", "data": {"approval_id": "ap-1"}}, runtime=rt).run_ids[0]
    wait_until(lambda: rt.ledger.run(run_id).status == "waiting", "the run to wait")  # type: ignore[union-attr]
    return run_id


def test_an_approval_pressed_in_the_page_resumes_the_run(
    site: str, browser: webdriver.Chrome, rt: Runtime, registry: FunctionRegistry, worker: None
) -> None:
    # Given a run waiting for an approval, and the operator on the approvals page
    run_id = _waiting_for_approval(rt, registry)
    _sign_in(browser, site)
    browser.find_element(By.LINK_TEXT, "Approvals").click()
    (row,) = wait_until(
        lambda: browser.find_elements(By.CSS_SELECTOR, '#approvals tr[data-approval="ap-1"]'),
        "the pending request's row",
    )
    assert row.is_displayed() and run_id[:24] in row.text
    # When Approve is pressed
    row.find_element(By.CSS_SELECTOR, "button.approve").click()
    # Then the page says the answer was sent, and the run resumes and ends approved
    flash = wait_until(lambda: browser.find_elements(By.ID, "flash"), "the flash message")
    assert "approve sent" in flash[0].text
    wait_until(lambda: rt.ledger.run(run_id).status == "completed", "the run to complete")  # type: ignore[union-attr]
    assert rt.ledger.run(run_id).result == "approve"  # type: ignore[union-attr]
    # And the request is gone from the page once reloaded
    browser.refresh()
    assert browser.find_elements(By.CSS_SELECTOR, "#approvals tr[data-approval]") == []


def test_an_override_is_sent_only_once_its_box_is_ticked(
    site: str, browser: webdriver.Chrome, rt: Runtime, registry: FunctionRegistry, worker: None
) -> None:
    # Given a run waiting for Ann's approval, and the operator on the approvals page
    run_id = _waiting_for_approval(rt, registry, approvers=("telegram:user:7",))
    _sign_in(browser, site)
    browser.get(site + "/dashboard/actions")
    (row,) = wait_until(
        lambda: browser.find_elements(By.CSS_SELECTOR, '#approvals tr[data-approval="ap-1"]'),
        "the pending request's row",
    )
    assert "for telegram:user:7" in row.text, row.text
    # When Approve (override) is pressed with the box unticked, Then the browser sends nothing
    box = row.find_element(By.CSS_SELECTOR, "input[name=override]")
    row.find_element(By.CSS_SELECTOR, "button.approve").click()
    assert browser.execute_script("return arguments[0].validity.valueMissing;", box)
    assert browser.find_elements(By.ID, "flash") == []
    assert rt.ledger.run(run_id).status == "waiting"  # type: ignore[union-attr]
    # When the box is ticked and it is pressed again
    box.click()
    row.find_element(By.CSS_SELECTOR, "button.approve").click()
    # Then the flash names the override, and the run resumes and ends approved
    flash = wait_until(lambda: browser.find_elements(By.ID, "flash"), "the flash message")
    assert "overriding telegram:user:7" in flash[0].text, flash[0].text
    wait_until(lambda: rt.ledger.run(run_id).status == "completed", "the run to complete")  # type: ignore[union-attr]
    assert rt.ledger.run(run_id).result == "approve"  # type: ignore[union-attr]


def test_a_chart_drawn_from_known_usage_shows_the_values(
    site: str, browser: webdriver.Chrome, rt: Runtime
) -> None:
    # Given 1234 tokens used today
    redis_records(rt).usage.add(rt.now_ms(), {"model": "claude-haiku-4-5", "in": 1000, "out": 234},
                                session="s", function="f")  # fmt: skip
    # When the charts page is opened
    _sign_in(browser, site)
    browser.find_element(By.LINK_TEXT, "Charts").click()
    chart = wait_until(lambda: browser.find_elements(By.ID, "chart-tokens"), "the tokens chart")[0]
    # Then it shows 14 bars, the last one drawn with its value in its title, and axis labels
    assert chart.is_displayed() and chart.size["width"] > 200, chart.size
    bars = chart.find_elements(By.CSS_SELECTOR, "rect.chart-bar")
    assert len(bars) == 14, len(bars)
    titles = [b.find_element(By.TAG_NAME, "title").get_attribute("textContent") for b in bars]
    assert str(titles[-1]).endswith(": 1234 tokens"), titles
    assert bars[-1].size["height"] > 50 and bars[0].size["height"] == 0
    axis = chart.find_element(By.CSS_SELECTOR, "text.y-max").get_attribute("textContent")
    assert axis == "1.2k"


def test_no_console_page_scrolls_sideways_at_420_px(
    site: str, browser: webdriver.Chrome, rt: Runtime, registry: FunctionRegistry
) -> None:
    # Given a finished run, so that every page has content
    @function(id="a-function-with-a-rather-long-name", trigger=event("app/w"), registry=registry)
    def wide(ctx: Context) -> str:
        return str(ctx.step.run("step-with-a-long-name", lambda: "x" * 300))

    rt.register_functions()
    run_id = publish({"name": "app/w", "data": {}}, runtime=rt).run_ids[0]
    drain(rt)
    _sign_in(browser, site)
    browser.set_window_size(420, 900)
    pages = ["/dashboard", f"/dashboard/runs/{run_id}", "/dashboard/conversations",
             "/dashboard/charts", "/dashboard/charts?span=14d", "/dashboard/actions",
             "/dashboard/health", f"/dashboard/runs/{run_id}/actions"]  # fmt: skip
    for path in pages:
        # When each page is opened 420 px wide
        browser.get(site + path)
        wait_until(lambda: browser.find_elements(By.TAG_NAME, "h1"), f"{path} to load")
        # Then its heading is visible and nothing is wider than the window
        assert browser.find_element(By.TAG_NAME, "h1").is_displayed(), path
        scroll_width, inner_width = browser.execute_script(FITS_SCRIPT)
        assert scroll_width <= inner_width, f"{path}: {scroll_width} px wide in {inner_width}"


LINES_SCRIPT = """
const lines = el => { const range = document.createRange(); range.selectNodeContents(el);
  return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size; };
return Array.from(document.querySelectorAll(arguments[0]))
  .map(el => [el.textContent.trim(), lines(el)]);
"""
"""Each matching element's text and how many lines it takes."""


def test_short_cells_and_waterfall_rows_keep_to_one_line_at_1280_px(
    site: str, browser: webdriver.Chrome, rt: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run that slept, waited for a sub-run and failed with a long error (which takes
    # the room the other columns need)
    @function(id="helper", trigger=event("app/help"), retries=0, registry=registry)
    def helper(ctx: Context) -> str:
        return "helped"

    @function(id="naps", trigger=event("app/nap"), retries=0, registry=registry)
    def naps(ctx: Context) -> str:
        ctx.step.sleep("nap", 0.01)
        ctx.step.invoke("ask-helper", "helper")
        raise RuntimeError("the upstream service said no, at considerable length " * 3)

    rt.register_functions()
    run_id = publish({"name": "app/nap", "data": {}}, runtime=rt).run_ids[0]
    wait_until(lambda: drain(rt) == [] and rt.ledger.run(run_id).status == "failed",  # type: ignore[union-attr]
               "the run to fail")  # fmt: skip
    _sign_in(browser, site)
    browser.set_window_size(1280, 900)
    # When the runs list and the run are opened 1280 px wide
    browser.get(site + "/dashboard")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "td.status"), "the list to load")
    cells = browser.execute_script(LINES_SCRIPT, "#runs td.status, #runs td.attempts")
    browser.get(f"{site}/dashboard/runs/{run_id}")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, ".wf-took"), "the run to load")
    took = browser.execute_script(LINES_SCRIPT, ".wf-took")
    # Then no status is broken inside its word, and no duration wraps under its kind
    assert cells and all(lines == 1 for _text, lines in cells), cells
    assert len(took) == 2 and all(lines == 1 for _text, lines in took), took


def test_buttons_codes_and_roles_are_not_broken_inside_a_word_at_420_px(
    site: str, browser: webdriver.Chrome, rt: Runtime, registry: FunctionRegistry, worker: None
) -> None:
    # Given an approval waiting, a pairing code and a scheduler beating
    _waiting_for_approval(rt, registry)
    redis_records(rt).pairing.request("telegram:user:9", "Bob", "telegram")
    beat(dataclasses.replace(rt, worker_id="a-rather-long-host-name:scheduler-1"), "scheduler")
    _sign_in(browser, site)
    browser.set_window_size(420, 900)
    # When the approvals and health pages are opened 420 px wide
    browser.get(site + "/dashboard/actions")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#pairing button"), "the page")
    buttons = browser.execute_script(LINES_SCRIPT, "#approvals button, #pairing button")
    codes = browser.execute_script(
        LINES_SCRIPT, "#pairing td:first-child, #pairing td:nth-child(3)"
    )
    browser.get(site + "/dashboard/health")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#processes td"), "the page")
    roles = browser.execute_script(LINES_SCRIPT, "#processes td:nth-child(2)")
    # Then every button, pairing code, channel and role keeps to one line
    assert len(buttons) == 4 and all(lines == 1 for _t, lines in buttons), buttons
    assert len(codes) == 2 and all(lines == 1 for _t, lines in codes), codes
    assert roles and all(lines == 1 for _t, lines in roles), roles
