"""Where a fleet process is put together: the function modules its workers load, and the
channel plug-ins, loaded and plugged into the agent.

Importing a module wires nothing; the entry points of each process call in here before their
first channel or turn: `harness worker` (`run_worker`), the web server (`harness.web.app`), and
the channel commands (`harness setup`, `harness poll`, the listeners of `harness up`). The
tools are plugged in when the agent builds its registries (`harness.tools.catalog`).

    plug_in_channels()                                   # before the first channel is used
    run_worker(settings, function_modules(settings), concurrency, queues)
"""

from __future__ import annotations

from collections.abc import Iterable

from channels import registry as channel_registry
from channels.agent_seam import ChannelPlatforms
from harness.agent import platforms
from harness.runtime import worker
from harness.settings import Settings

BUILTIN_FUNCTION_MODULES: tuple[str, ...] = (
    "harness.agent.handlers",
    "harness.agent.heartbeat",
    "harness.agent.approval_text",
    "channels.handlers",
)
"""The modules whose `@function`s every worker runs (and the web server registers)."""


def function_modules(settings: Settings, extra: Iterable[str] = ()) -> list[str]:
    """The modules whose functions a worker runs: built-ins, `HARNESS_FUNCTION_MODULES`, extra."""
    configured = [m.strip() for m in settings.harness_function_modules.split(",") if m.strip()]
    seen: dict[str, None] = {}
    for module in (*BUILTIN_FUNCTION_MODULES, *configured, *extra):
        seen.setdefault(module, None)
    return list(seen)


def plug_in_channels() -> list[str]:
    """Load the channel plug-ins (every `harness.channels` entry point, see `channels.plugin`)
    into the registry, and make them what chat turns in this process draw drafts on and fetch
    files from (`harness.agent.platforms`). Returns the channels' names. A plug-in that fails
    to load is left out with one log line. Safe to call again (it reloads)."""
    loaded = channel_registry.load_plugins()
    platforms.install(ChannelPlatforms(channel_registry.channel_or_none))
    return loaded


def run_worker(settings: Settings, modules: list[str], concurrency: int, queues: list[str]) -> None:
    """`harness.runtime.worker.run_worker` with the channels plugged in first. Blocks."""
    plug_in_channels()
    worker.run_worker(settings, modules, concurrency, queues)
