"""The Lua scripts: one `.lua` file each in `harness/runtime/lua/`, called by name.

Stores outside the engine keep their scripts in a `lua/` folder of their own package and load
them with `load_from` (`harness/records/lua/`); the engine names none of them.

Each file opens with what it decides and its KEYS / ARGV / reply. A line
`-- #include prelude.lua` is replaced by that file's text, so the run scripts share one
prelude (key names, the kick, waiter and singleton helpers) while `commit.lua`, which every
new step runs, is written out without it. A file is read and composed once per process;
`load` registers it on a client as a redis-py `Script`, which calls EVALSHA and, on NOSCRIPT
(a restarted Redis, a promoted replica after a failover), loads the script and calls again.

Calling a script raises redis-py's errors, like any command: the stores' methods map them to
`BusUnavailableError` (`harness.runtime.bus_errors`).
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Literal

import redis
import redis.asyncio
from redis.commands.core import AsyncScript, Script

ScriptName = Literal[
    "publish", "claim", "renew", "commit", "drain_inbox", "suspend", "release", "finish",
    "reap", "request_cancel", "cron_claim_ticks", "source_replace", "step_tries", "call_park",
    "call_take", "call_keep", "call_settle", "call_waiting",
]  # fmt: skip
"""Every script there is; each is `lua/<name>.lua`."""

_INCLUDE = re.compile(r"^-- #include (?P<file>[a-z_]+\.lua)$", re.MULTILINE)


def source(name: str) -> str:
    """The text of `lua/<name>.lua` (a script name, or an included file's name without `.lua`)
    with its includes replaced by their text. Read from the installed package once per
    process; raises `FileNotFoundError` for a name with no file."""
    return package_source("harness.runtime", name)


@functools.cache
def package_source(package: str, name: str) -> str:
    """`source` for the `lua/` folder of `package`; includes are read from the same folder."""
    text = resources.files(package).joinpath("lua", f"{name}.lua").read_text("utf-8")
    return _INCLUDE.sub(lambda found: package_source(package, found["file"][:-4]), text)


def load(client: redis.Redis, name: ScriptName) -> Script:
    """Script `name` registered on `client`: calling it runs EVALSHA, loading the script again
    when Redis answers NOSCRIPT. Touches no network."""
    return client.register_script(source(name))


def load_from(client: redis.Redis, package: str, name: str) -> Script:
    """`load` for a script of another package: `<package>/lua/<name>.lua`. Touches no
    network; raises `FileNotFoundError` for a name with no file."""
    return client.register_script(package_source(package, name))


def load_async(client: redis.asyncio.Redis, name: ScriptName) -> AsyncScript:
    """`load` on an async client."""
    return client.register_script(source(name))
