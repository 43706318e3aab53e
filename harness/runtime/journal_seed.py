"""Writing a journal for a run that does not exist yet, so that it starts by replaying it
(`harness runs fork --from STEP`). The only Redis write outside the Lua scripts that
touches a journal; it is safe because the run is created after it, by `publish`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.runtime.bus_errors import on_bus
from harness.runtime.instance import Runtime


@on_bus("copy the journal")
def seed_journal(runtime: Runtime, run_id: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Write `entries` as run `run_id`'s journal, expiring with the retention period unless
    the run ends first (its end sets the final expiry). No-op for no entries."""
    if not entries:
        return
    key = runtime.keys.journal(run_id)
    pipe = runtime.redis.pipeline(transaction=True)
    pipe.hset(key, mapping={k: json.dumps(v, separators=(",", ":")) for k, v in entries.items()})
    pipe.expire(key, runtime.retention_s)
    pipe.execute()
