"""Python routers: a network's router as a function, from trusted code only.

    from harness.agent.networks.code_routers import router

    @router("triage")
    def triage(state, last, iteration):      # last: AgentResult | None
        if state.get("done"):
            return None                      # stop
        return "coder" if state.get("kind") == "bug" else "researcher"

A network names it with `router: {kind: python, name: triage}`. The function lives in a
module the operator loads (`HARNESS_FUNCTION_MODULES`, imported by every worker) or in an
installed package's entry point (group `harness.routers`, the entry point's name is the
router's). Nothing under the workspace is ever imported for this: the workspace is the
agent's to write, and the fleet runs no code from it (the sidecar's functions run sandboxed,
elsewhere).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from harness.agent.networks.decisions import AgentResult
from harness.plugins import load

ROUTERS = "harness.routers"
"""The entry-point group of Python routers."""

RouterFunction = Callable[[dict[str, Any], AgentResult | None, int], str | None]
"""(a copy of the state, the last agent's result or None, how many agents have run) -> the
next agent's name, or None to stop."""

_registered: dict[str, RouterFunction] = {}
_plugins: dict[str, RouterFunction] | None = None
_lock = threading.Lock()


def router(name: str) -> Callable[[RouterFunction], RouterFunction]:
    """Register the decorated function as the Python router `name` (a later registration of
    the same name replaces it). Returns the function unchanged."""

    def register(fn: RouterFunction) -> RouterFunction:
        with _lock:
            _registered[name] = fn
        return fn

    return register


def find_router(name: str) -> RouterFunction | None:
    """The router registered as `name` in this process, else the plug-in of that name, else
    None. Plug-ins are imported on the first call that needs them."""
    global _plugins
    with _lock:
        found = _registered.get(name)
        if found is not None:
            return found
        if _plugins is None:
            loaded = load(ROUTERS, None, callable, "a router function")
            _plugins = {p.name: p.value for p in loaded}  # type: ignore[misc]
        return _plugins.get(name)


def registered_names() -> list[str]:
    """The routers registered in this process (plug-ins not imported), sorted."""
    with _lock:
        return sorted(_registered)
