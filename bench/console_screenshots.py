"""Regenerate the console's screenshots in `docs/screenshots/` (shown in the README).

Builds made-up history (`bench.console_history`: a day of real agent turns against the
scripted model, reports with a retry, a sleep, a sub-run and failures, usage, approvals,
pairing, health) on an in-memory Redis, serves the dashboard on a free local port, signs in
with Debian's headless Chromium (as `tests/web/test_console_browser.py` does) and saves each
page at 1280 and 420 px wide, as 64-colour PNGs to keep the repository small. The history's
clock is fixed, so regenerating changes only the pictures of what changed.

Usage: python -m bench.console_screenshots [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

import uvicorn
from PIL import Image
from pydantic import SecretStr
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from bench.console_history import Clock, History, build
from harness.agent.deps import set_agent_deps
from harness.llm.guard import forbid_real_model_calls
from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes
from tests.fakes.model_server import ModelServer

KEY = "screenshot-key-0123456789"
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTHS = (1280, 420)
PAGES = {"runs": "/dashboard", "conversations": "/dashboard/conversations",
         "charts": "/dashboard/charts", "actions": "/dashboard/actions",
         "health": "/dashboard/health"}  # fmt: skip
COLOURS = 64
OPENED = {"conversation": 'details.tool-call[data-tool="ls"]', "failed-run": "details.traceback"}
"""Folds opened before a page's picture is taken (the other tool call stays folded)."""
SETTLE_S = 0.5
"""How long a page is left to receive its live stream's first update before its picture."""


def serve(runtime: Runtime, state: Path) -> tuple[uvicorn.Server, str]:
    """The dashboard on a free local port, in a thread, reading transcripts under `state`;
    returns the server and its URL."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, harness_api_key=SecretStr(KEY), harness_state_dir=state
    )
    app = create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    ready = threading.Event()
    while not server.started:
        ready.wait(0.05)
    return server, f"http://127.0.0.1:{port}"


def shoot(url: str, pages: dict[str, str], out: Path) -> list[Path]:
    """Sign in, then save each page at each of `WIDTHS` as `<name>-<width>.png`."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    flags = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--disable-dev-shm-usage", "--no-first-run", "--window-size=1280,900")  # fmt: skip
    for flag in flags:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    saved = []
    try:
        driver.get(f"{url}/dashboard")
        driver.find_element(By.ID, "key").send_keys(KEY)
        driver.find_element(By.ID, "sign-in").click()
        for name, path in pages.items():
            for width in WIDTHS:
                driver.set_window_size(width, 900)
                driver.get(url + path)
                time.sleep(SETTLE_S)  # the live stream's first event re-renders the page
                if name in OPENED:
                    script = "document.querySelectorAll(arguments[0]).forEach(d => d.open = true)"
                    driver.execute_script(script, OPENED[name])
                height = int(driver.execute_script("return document.documentElement.scrollHeight"))
                driver.set_window_size(width, min(max(height + 120, 400), 1600))
                target = out / f"{name}-{width}.png"
                driver.save_screenshot(str(target))
                _shrink(target)
                saved.append(target)
    finally:
        driver.quit()
    return saved


def _shrink(path: Path) -> None:
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=COLOURS)
    small.save(path, optimize=True)


def pages(history: History) -> dict[str, str]:
    """Each screenshot's name and path: the fixed pages, then the featured chat and runs."""
    return {
        **PAGES,
        "conversation": f"/dashboard/conversations/{quote(history.chat, safe='')}",
        "run": f"/dashboard/runs/{history.report}",
        "failed-run": f"/dashboard/runs/{history.failed}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    forbid_real_model_calls()
    with tempfile.TemporaryDirectory() as folder, ModelServer() as model:
        history = build(Clock(), model, Path(folder))
        server, url = serve(history.runtime, history.state)
        try:
            for path in shoot(url, pages(history), args.out):
                print(f"{path} {path.stat().st_size // 1024} KiB")
        finally:
            server.should_exit = True
            set_agent_deps(None)


if __name__ == "__main__":
    main()
