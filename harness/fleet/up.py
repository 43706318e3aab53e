"""`harness up` once its fleet is planned: the CLI's process replaced by `python -m
harness.fleet.up`, which only supervises (`harness.fleet.supervision.supervise`).

Planning loads typer, pydantic's settings, redis-py, the channel plug-ins and the agent's
workspace (about 74 MB), which the supervisor would hold for the fleet's whole life for
nothing. So the CLI plans (`harness.fleet.supervisor.exec_fleet`: the checks, the embedded
Redis, the fleet record), then `hand_over` replaces its process with this module (`os.execv`:
the same pid, so the fleet record, the signals people send and the terminal's job control
stay right; the embedded Redis stays its child), which holds about 16 MB.

The plan crosses the exec in a file without a name (`tempfile.TemporaryFile`) whose descriptor
`PLAN_FD_ENV` names: it holds the Redis URL with its password, so it must not be on a command
line (`ps` shows those) nor in a variable the processes inherit. `take_over` reads it, closes
it and removes the variable before any process starts. SIGINT and SIGTERM stay blocked across
the exec (the signal mask survives it): one sent meanwhile arrives once this side can stop the
embedded Redis.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import asdict
from pathlib import Path
from typing import NoReturn

from harness.fleet.supervision import FleetPlan, RedisChild, exit_on_sigterm, stand_down, supervise

PLAN_FD_ENV = "HARNESS_UP_PLAN_FD"
"""The descriptor of the file holding the plan, set for the exec only."""
MODULE = "harness.fleet.up"
_HELD = {signal.SIGINT, signal.SIGTERM}


def hand_over(plan: FleetPlan, redis: RedisChild | None) -> NoReturn:
    """Replace this process with `python -m harness.fleet.up` supervising `plan` and `redis`
    (this process's child). Returns only by raising `OSError` when the exec fails, with the
    signal mask and the environment as they were: the caller still owns `redis` and the
    record then."""
    import tempfile  # here: this side's shutil, bz2 and lzma would stay in the supervisor

    handed = {
        "plan": asdict(plan),
        "redis": None if redis is None else {"pid": redis.pid, "url_file": _str(redis.url_file)},
    }
    with tempfile.TemporaryFile() as plan_file:  # no name: nobody else can open it
        plan_file.write(json.dumps(handed).encode())
        plan_file.flush()
        plan_file.seek(0)  # the exec'd side reads from the shared offset
        os.set_inheritable(plan_file.fileno(), True)
        os.environ[PLAN_FD_ENV] = str(plan_file.fileno())
        sys.stdout.flush()
        sys.stderr.flush()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            os.execv(sys.executable, [sys.executable, "-m", MODULE])
        finally:  # only when the exec failed
            del os.environ[PLAN_FD_ENV]
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def take_over() -> tuple[FleetPlan, RedisChild | None]:
    """The plan `hand_over` left this process: read from `PLAN_FD_ENV`'s descriptor, which is
    closed, and the variable removed. Raises `KeyError` when there is none, `ValueError` or
    `OSError` when it cannot be read."""
    descriptor = int(os.environ.pop(PLAN_FD_ENV))
    with os.fdopen(descriptor, "rb") as plan_file:
        handed = json.loads(plan_file.read())
    fields = handed["plan"]
    plan = FleetPlan(**{**fields, "announcements": tuple(fields["announcements"])})
    redis = handed["redis"]
    if redis is None:
        return plan, None
    url_file = redis["url_file"]
    return plan, RedisChild(int(redis["pid"]), Path(url_file) if url_file else None)


def _str(path: Path | None) -> str | None:
    return None if path is None else str(path)


def main() -> NoReturn:
    """Supervise the plan handed over, then exit with the fleet's code (as `harness up`)."""
    try:
        plan, redis = take_over()
    except (KeyError, ValueError, OSError) as exc:
        print(
            f"error: {MODULE} runs only as `harness up` hands over to it ({exc!r})", file=sys.stderr
        )
        sys.exit(2)
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    code = 130
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)  # one sent meanwhile arrives here
        code = supervise(plan, redis=redis)
    except KeyboardInterrupt:
        pass
    finally:
        stand_down(plan, redis)  # after `supervise`'s own: nothing left to do
    sys.exit(code)


if __name__ == "__main__":
    main()
