"""Checking a network the agent declared in Python (`@network`, `declare.py`): untrusted data.

The declaration was made by agent code in the sidecar's host, so it is checked on the
trusted side twice, with the rules of a network file: by the sidecar's executor before it is
registered (`harness.sidecar.admission`), and by the fleet when it loads the workspace's
networks (`load.load_networks`, which also checks that its agents exist). It may only
narrow: its router must be its own router function (`network-router-<name>`, served by the
same load), never another function; its agents run with their own files' tools.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from harness.agent.networks.declare import NETWORK_KIND, router_id
from harness.agent.networks.spec import FunctionRouter, NetworkSpec
from harness.runtime.function_sources import Declaration

MAX_DECLARATION_CHARS = 64_000
"""The largest declaration (as JSON) the sidecar registers."""
MAX_DECLARED = 20
"""The most networks the workspace's functions may declare."""


def place(declaration: Declaration) -> str:
    """Where it was declared, as a workspace path: `functions/<file>`."""
    return f"functions/{declaration.file}"


def check_declared(declaration: Declaration) -> NetworkSpec | str:
    """The network `declaration` declares, or why it declares none (a network file's rules,
    plus: a size cap, and its router is its own router function)."""
    if declaration.kind != NETWORK_KIND:
        return f"not a network declaration ({declaration.kind!r})"
    size = len(json.dumps(declaration.body))
    if size > MAX_DECLARATION_CHARS:
        return f"@network declaration is {size} characters of JSON, over {MAX_DECLARATION_CHARS}"
    if "path" in declaration.body:
        return "@network: 'path' is not set here"
    try:
        spec = NetworkSpec.model_validate({**declaration.body, "path": place(declaration)})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"@network: {where}: {first['msg']}"
    own = router_id(spec.name)
    if not isinstance(spec.router, FunctionRouter) or spec.router.id != own:
        return f"@network {spec.name!r}: its router must be its own function {own!r}"
    return spec
