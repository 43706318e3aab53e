"""Networks: named agents taking turns under a router, with shared typed state.

    networks = load_networks(workspace)   # every `networks/<name>.md` that parsed
    spec = networks.get("nightly")        # None: no such network
    networks.errors                       # [NetworkLoadError(path, line, message), ...]

`spec.NetworkSpec` is what one file declares; `run.run_network` (`agent-network`, on
`agent.network.run`) runs one; `state` is its shared state and the tools its agents use on
it; `router` makes each decision a durable step, by `decisions` (rules, sequence),
`code_routers` (Python routers from trusted code) or `routing_agent` (a model call).
"""

from harness.agent.networks.load import NetworkLoadError, Networks, load_networks
from harness.agent.networks.spec import NetworkSpec

__all__ = ["NetworkLoadError", "NetworkSpec", "Networks", "load_networks"]
