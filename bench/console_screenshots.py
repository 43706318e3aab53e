"""Regenerate the console's screenshots in `docs/screenshots/` (shown in the README).

Builds a fleet's worth of made-up history on an in-memory Redis (fakeredis, with a clock
the script moves): runs over the last day, some failed, chat turns of a few seconds, two
weeks of token usage, a run waiting for an approval, a pairing code, an undelivered reply,
a function file that failed to load, two workers, a scheduler and a sidecar beating.
Serves the dashboard on a free local port, signs in with Debian's headless Chromium (as
`tests/web/test_dashboard_browser.py` does) and saves each page at 1280 and 420 px wide,
as 64-colour PNGs to keep the repository small.

Usage: python -m bench.console_screenshots [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import dataclasses
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import fakeredis
import uvicorn
from PIL import Image
from pydantic import SecretStr
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from harness.composition import extend_runtime
from harness.events.event import MESSAGE_HANDLER
from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.function_sources import FILE_SOURCE, LoadError, replace_source
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.presence import beat
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes

KEY = "screenshot-key-0123456789"
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTHS = (1280, 420)
PAGES = {"runs": "/dashboard", "charts": "/dashboard/charts", "actions": "/dashboard/actions",
         "health": "/dashboard/health"}  # fmt: skip
COLOURS = 64


@dataclass
class Clock:
    """A clock that only moves when told to (runs then get known durations)."""

    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def history(clock: Clock) -> tuple[Runtime, str]:
    """A runtime holding the made-up history; returns it and the id of a finished chat turn."""
    registry = FunctionRegistry()
    server = fakeredis.FakeServer()
    runtime = extend_runtime(Runtime(
        redis=fakeredis.FakeRedis(server=server, decode_responses=True),
        kicker=RecordingKicker(), registry=registry, clock=clock,
    ))  # fmt: skip

    @function(id=MESSAGE_HANDLER, trigger=event("demo/message"), retries=0, registry=registry)
    def turn(ctx: Context) -> str:
        seconds = float(ctx.event.data["seconds"])
        ctx.step.run("model", lambda: setattr(clock, "now", clock.now + seconds))
        return "Here is the summary you asked for."

    @function(id="nightly-report", trigger=event("demo/report"), retries=0, registry=registry)
    def report(ctx: Context) -> str:
        if ctx.event.data.get("fail"):
            raise RuntimeError("the report's source answered 503")
        return str(ctx.step.run("collect", lambda: "42 rows"))

    @function(id="deploy-check", trigger=event("demo/deploy"), retries=0, registry=registry)
    def deploy(ctx: Context) -> str:
        ctx.step.run("open", lambda: redis_records(ctx.runtime).approvals.open(
            "a1b2c3d4e5f6", [], None, ctx.run_id))  # fmt: skip
        ctx.step.wait_for_event("answer", event="agent.approval.answered", timeout="1h")
        return "deployed"

    runtime.register_functions()
    start = clock.now - 23 * 3600
    turn_id = ""
    for hour in range(24):
        clock.now = start + hour * 3600
        for k in range(hour % 5 + 1):
            seconds = 1.5 + (hour * 7 + k * 3) % 9
            turn_id = publish({"name": "demo/message", "data": {"seconds": seconds}},
                              runtime=runtime).run_ids[0]  # fmt: skip
        publish({"name": "demo/report", "data": {"fail": hour % 6 == 0}}, runtime=runtime)
        drain(runtime)
    usage = redis_records(runtime).usage
    for day in range(14):
        tokens = {"model": "claude-haiku-4-5", "in": 40_000 + 9_000 * (day % 5),
                  "out": 6_000 + 1_500 * (day % 3)}  # fmt: skip
        usage.add(int((clock.now - (13 - day) * 86_400) * 1000), tokens, session="demo",
                  function=MESSAGE_HANDLER)  # fmt: skip
    publish({"name": "demo/deploy", "data": {}}, runtime=runtime)
    drain(runtime)
    records = redis_records(runtime)
    records.pairing.request("telegram:user:7", "Ann", "telegram")
    records.undelivered.record(UndeliveredReply(
        reply_id="reply-5f1e", run_id=turn_id, channel="telegram", chat_id="42",
        error="Forbidden: bot was blocked by the user", at_ms=int(clock.now * 1000),
    ))  # fmt: skip
    typo = "NameError: name 'shedule' is not defined"
    replace_source(runtime, FILE_SOURCE, {}, [LoadError(file="digest.py", line=12, error=typo)])
    members = [("worker-1", "worker", ("harness",)), ("worker-2", "worker", ("harness",)),
               ("scheduler-1", "scheduler", ()), ("sidecar-1", "sidecar", ())]  # fmt: skip
    for member, role, queues in members:
        beat(dataclasses.replace(runtime, worker_id=f"demo-host:{member}"), role, queues)
    return runtime, turn_id


def serve(runtime: Runtime) -> tuple[uvicorn.Server, str]:
    """The dashboard on a free local port, in a thread; returns the server and its URL."""
    settings = Settings(_env_file=None, harness_api_key=SecretStr(KEY))  # type: ignore[call-arg]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    runtime, turn_id = history(clock)
    server, url = serve(runtime)
    try:
        pages = {**PAGES, "run": f"/dashboard/runs/{turn_id}"}
        for path in shoot(url, pages, args.out):
            print(f"{path} {path.stat().st_size // 1024} KiB")
    finally:
        server.should_exit = True


if __name__ == "__main__":
    main()
