"""`/dashboard`: runs, their steps, usage and functions, server-rendered, live over SSE."""

from harness.web.dashboard.routes import router

__all__ = ["router"]
