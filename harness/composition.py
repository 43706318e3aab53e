"""Where a fleet process is put together: the channel plug-ins, loaded and plugged into the
agent, before the worker loads its function modules (`harness.fleet_functions`).

Importing a module wires nothing; the entry points of each process call in here before their
first channel or turn: `harness worker` (`run_worker`), the web server (`harness.web.app`), and
the channel commands (`harness setup`, `harness poll`, the listeners of `harness up`). The
tools are plugged in when the agent builds its registries (`harness.tools.catalog`).

    plug_in_channels()                                   # before the first channel is used
    run_worker(settings, function_modules(settings), concurrency, queues)   # fleet_functions
"""

from __future__ import annotations

from channels import registry as channel_registry
from channels.agent_seam import ChannelPlatforms
from harness.agent import platforms
from harness.runtime import worker
from harness.settings import Settings


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
