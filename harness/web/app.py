"""The app factory and the server entry point (`harness web`).

`production_app` is a normal ASGI app factory: every bit of start-up work is in it or in its
lifespan, so uvicorn, gunicorn's uvicorn worker or `harness web` run the same app."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import APIRouter, FastAPI
from starlette.types import Lifespan

import harness.web.chat_api as chat_api
import harness.web.events_api as events_api
import harness.web.health as health
import harness.web.metrics_api as metrics_api
import harness.web.webhooks as webhooks
from harness.access import announce_policy
from harness.composition import plug_in_channels, use_fleet
from harness.fleet.heap import freeze_startup_heap
from harness.fleet_functions import BUILTIN_FUNCTION_MODULES
from harness.observe.json_logs import configure_logging
from harness.runtime import Runtime, get_runtime
from harness.settings import Settings, get_settings
from harness.web import dashboard
from harness.web.body import BodyLimits
from harness.web.deps import WebContext
from harness.web.header_timeout import HeaderTimeoutProtocol
from harness.web.listening import run_server
from harness.web.processes import serve_processes
from harness.web.registrar import FunctionRegistrar

log = logging.getLogger(__name__)

_UVICORN_LEVELS = {"warn": "warning", "fatal": "critical"}


def create_app(
    runtime_factory: Callable[[], Runtime] = get_runtime,
    settings: Settings | None = None,
    routers: Iterable[APIRouter] = (),
    lifespan: Lifespan[FastAPI] | None = None,
) -> FastAPI:
    """Build the app: `/livez`, `/healthz`, `/readyz`, `/metrics`, `/api/events`, then each
    of `routers` (`default_routers()` in production: the channel webhooks, `/api/chat` and
    `/dashboard`). Routes are matched in that order: every router before a route costs each
    of its requests the matching of its paths (the dashboard's, 30 µs), so the hottest come
    first.
    Every request body is bounded by `BodyLimits` (1 MiB, `WEB_BODY_TIMEOUT`); the API docs
    are served only with `WEB_API_DOCS`.

    Nothing connects at build time; `runtime_factory` is called per request. `lifespan` runs
    around serving (`fleet_app`'s starts its background start-up work). More routers
    can be added afterwards with `app.include_router`; they reach the runtime and settings
    through the `harness.web.web_context` dependency.
    """
    settings = settings or get_settings()
    docs = settings.web_api_docs  # the schema names every route and body: only when asked
    app = FastAPI(
        title="Harness",
        version="0.1.0",
        openapi_url="/openapi.json" if docs else None,
        docs_url="/docs" if docs else None,
        redoc_url="/redoc" if docs else None,
        lifespan=lifespan,
    )
    app.state.harness = WebContext(runtime_factory=runtime_factory, settings=settings)
    app.add_middleware(BodyLimits, timeout=settings.web_body_timeout)
    app.include_router(health.router)
    app.include_router(metrics_api.router)
    app.include_router(events_api.router)
    for router in routers:
        app.include_router(router)
    return app


def default_routers() -> list[APIRouter]:
    """The routers `serve` mounts after the probes, `/metrics` and `/api/events`, hottest
    first: the channel webhooks (`POST /webhooks/{channel}`), the chat API and `/dashboard`
    (whose many paths cost 30 µs to pass over)."""
    return [webhooks.router, chat_api.router, dashboard.router]


def serve(
    settings: Settings | None = None,
    runtime_factory: Callable[[], Runtime] = get_runtime,
    *,
    workers: int = 1,
) -> None:
    """Serve the app (`fleet_app`) on `settings.host`:`settings.port` until interrupted, with
    the request-head deadline (`HeaderTimeoutProtocol`). Blocks.

    The default `get_runtime` builds the runtime from the process settings (`get_settings()`),
    not from `settings`: pass those, or a `runtime_factory` built from yours. With `workers`
    above 1, uvicorn runs that many processes on the port, each building the app from the
    process settings (`production_app`); `runtime_factory` then must be `get_runtime`.
    """
    settings = settings or get_settings()
    level = settings.log_level.lower()
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "timeout_keep_alive": 5,
        "http": HeaderTimeoutProtocol,  # reads WEB_HEADER_TIMEOUT in each process
        "log_level": _UVICORN_LEVELS.get(level, level),
        # uvicorn's own handlers would print its lines and the access lines past our
        # formatter: without them they reach the root logger (`configure_logging`), in
        # LOG_FORMAT and redacted.
        "log_config": None,
    }
    if workers > 1:
        if runtime_factory is not get_runtime:
            raise ValueError("several web workers build their runtime from the process settings")
        status = serve_processes(f"{__name__}:production_app", workers, options)
        if status:
            raise SystemExit(status)
    else:
        run_server(uvicorn.Config(fleet_app(settings, runtime_factory), **options))


def production_app() -> FastAPI:
    """The app as `harness web` serves it, from the process settings: the factory any ASGI
    server runs (`uvicorn --factory harness.web.app:production_app`, gunicorn's uvicorn
    worker, each of `harness web --workers N`'s processes). See `fleet_app`."""
    use_fleet()
    return fleet_app(get_settings(), get_runtime)


def fleet_app(settings: Settings, runtime_factory: Callable[[], Runtime]) -> FastAPI:
    """The whole web app with all its start-up work, so any ASGI server runs what `harness
    web` runs: logs in `LOG_FORMAT` at `LOG_LEVEL` (uvicorn's own lines too), the DM policy
    announced, the channels plugged in, and, in the ASGI lifespan, each configured channel
    warmed up and the built-in functions' triggers registered in the background (retrying
    while Redis is down), so that an event published before any worker is up is routed to
    its functions and waits for a worker instead of matching nothing. What start-up built is
    frozen (`freeze_startup_heap`).

    The request-head deadline is the server's, not the app's: `serve` passes
    `HeaderTimeoutProtocol`; another server is told `--http
    harness.web.header_timeout:HeaderTimeoutProtocol` (docs/deploy.md)."""
    configure_logging(settings.log_level, settings.log_format)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # a server that set its own handlers (`uvicorn --factory`) would print these lines
        # past our formatter: through the root logger they are in LOG_FORMAT and redacted
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").addFilter(_QUIET_PROBES)
    announce_policy(settings.dm_policy)
    plug_in_channels()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        _warm_up_channels()
        registrar = FunctionRegistrar(runtime_factory, BUILTIN_FUNCTION_MODULES).start()
        try:
            yield
        finally:
            registrar.stop()

    app = create_app(runtime_factory, settings, routers=default_routers(), lifespan=lifespan)
    freeze_startup_heap()
    return app


class _QuietProbes(logging.Filter):
    """Drops uvicorn's access-log lines for the probes and `/metrics`: probes (a load
    balancer, `harness up` waiting for readiness, a scraper) would drown the log. A failing
    check logs by itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3:
            return str(args[2]).split("?", 1)[0] not in _PROBES
        return True


_PROBES = frozenset({"/livez", "/healthz", "/readyz", "/metrics"})
_QUIET_PROBES = _QuietProbes()  # one filter: a second app in the process adds no second one


def _warm_up_channels() -> None:
    """Let each configured channel start its platform look-ups (the bot's own id or name) in
    the background, so the first webhook finds them cached. Never blocks, never raises."""
    from channels.registry import configured_channels, get_channel
    from channels.tokens import blank_tokens

    try:
        for name in configured_channels():
            if blank_tokens(name, "_bot_token"):
                continue  # an empty token is no token: no getMe, no auth.test
            warm_up = getattr(get_channel(name), "warm_up", None)
            if callable(warm_up):
                warm_up()
    except Exception as exc:  # a misconfigured channel is reported by its webhook, not here
        log.warning("channel warm-up skipped: %s", type(exc).__name__)
