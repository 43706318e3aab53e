"""`harness up --only web,worker`: which of the fleet's processes to run.

    chosen = only(default_processes(), "web,worker")   # Selection(processes, embedded_redis=False)

The names are the fleet's own (`web`, `worker`, `scheduler`, `gateway`, `sidecar`, a channel's
`<channel>-listener`) and `redis`, the embedded Redis. Without `redis` the processes use the
Redis that `REDIS_URL` names or that a running `harness up` of the same workspace published
(`harness.runtime.connection.resolve_redis_url`), so one terminal can run
`--only redis,web,scheduler` and another `--only worker`.
"""

from __future__ import annotations

from dataclasses import dataclass

REDIS = "redis"
KNOWN = ("web", "worker", "scheduler", "gateway", "sidecar", REDIS)


class UnknownProcessError(ValueError):
    """A name in `--only` that is not one of the fleet's processes (the message lists them)."""


@dataclass(frozen=True)
class Selection:
    """The processes to run (name -> command, in the fleet's order) and whether to start the
    embedded Redis (when no `REDIS_URL` is configured)."""

    processes: dict[str, str]
    embedded_redis: bool


def only(processes: dict[str, str], names: str) -> Selection:
    """The part of `processes` that the comma-separated `names` choose, plus `redis`. Raises
    `UnknownProcessError` for an empty list, `redis` alone, an unknown name, or a known one
    this fleet does not run (`sidecar` with SIDECAR_ENABLED=false)."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    known = [*processes, REDIS]
    if not wanted:
        raise UnknownProcessError(f"name at least one process: {', '.join(known)}")
    for name in wanted:
        if name in known:
            continue
        why = " (it is turned off in the settings)" if name in KNOWN else ""
        raise UnknownProcessError(f"no process {name!r}{why}; choose from {', '.join(known)}")
    chosen = {name: command for name, command in processes.items() if name in wanted}
    if not chosen:  # the embedded Redis alone is not a fleet: nothing would stop it
        raise UnknownProcessError(f"name a process besides redis: {', '.join(processes)}")
    return Selection(chosen, REDIS in wanted)
