"""What routes need from the app: the runtime factory and the settings, as one dependency.

Routes take it from the app instead of reaching for process globals, so tests can hand the
app a runtime on fakeredis: FastAPI routes as `Annotated[WebContext, Depends(web_context)]`,
the webhook routes (plain Starlette routes, the hottest path) with `context_of(request)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from harness.runtime import Runtime
from harness.settings import Settings


@dataclass(frozen=True)
class WebContext:
    """The app's dependencies. `runtime_factory` may raise `ConfigurationError` (no Redis
    configured); it is called per request and must not block (the default builds the
    process's runtime once, without connecting)."""

    runtime_factory: Callable[[], Runtime]
    settings: Settings


async def web_context(request: Request) -> WebContext:
    """FastAPI dependency: the `WebContext` that `create_app` stored on the app. Async, so
    FastAPI runs it on the event loop rather than handing it to a thread."""
    return context_of(request)


def context_of(request: Request) -> WebContext:
    """The `WebContext` that `create_app` stored on the request's app, without FastAPI's
    dependency solving: the webhook routes, the hottest path, take it this way."""
    context = request.app.state.harness
    if not isinstance(context, WebContext):
        raise RuntimeError("this app was not built by harness.web.create_app")
    return context
