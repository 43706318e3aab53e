"""The trigger table: function specs in Redis, so any process can fan events out to them."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import redis
import redis.asyncio

from harness.runtime.bus_errors import on_bus, redis_errors
from harness.runtime.functions import FunctionSpec
from harness.runtime.keys import Keys

NEVER_LOADED = "never loaded"  # no version the table's counter can hold
_NAMES_KEPT = 1024  # event names whose specs `planned_for` keeps before starting over


class TriggerTable:
    """Reads and writes function specs. Reads are cached until the table's version changes,
    so a publish costs one GET when nothing was registered since the last one. Methods that
    reach Redis raise `BusUnavailableError` when it fails."""

    def __init__(
        self, client: redis.Redis, keys: Keys, aclient: redis.asyncio.Redis | None = None
    ) -> None:
        self._redis = client
        self._aredis = aclient
        self._keys = keys
        self._lock = threading.Lock()
        self._version: str | None = None
        self._specs: list[FunctionSpec] = []
        self._by_name: dict[str, list[FunctionSpec]] = {}

    @on_bus("register functions")
    def register(self, specs: Iterable[FunctionSpec]) -> int:
        """Add or replace specs by function id. Returns how many were written."""
        mapping = {spec.id: spec.model_dump_json() for spec in specs}
        if not mapping:
            return 0
        pipe = self._redis.pipeline()
        pipe.hset(self._keys.functions, mapping=mapping)  # type: ignore[arg-type]
        pipe.incr(self._keys.functions_version)
        pipe.execute()
        return len(mapping)

    @on_bus("unregister functions")
    def unregister(self, function_ids: Iterable[str]) -> None:
        """Remove specs; events published afterwards no longer reach these functions."""
        ids = list(function_ids)
        if ids:
            pipe = self._redis.pipeline()
            pipe.hdel(self._keys.functions, *ids)
            pipe.incr(self._keys.functions_version)
            pipe.execute()

    @on_bus("read the trigger table")
    def specs(self) -> list[FunctionSpec]:
        """Every registered spec, fresh as of this call's version check."""
        return self.specs_at(self._redis.get(self._keys.functions_version))  # type: ignore[arg-type]

    @on_bus("read the trigger table")
    def specs_at(self, version: str | None) -> list[FunctionSpec]:
        """Every registered spec, given the table's version read by the caller (so it can
        batch that read with others); reloads only when the version changed."""
        cached = self._cached(version)
        if cached is not None:
            return cached
        return self._store(version, self._redis.hgetall(self._keys.functions))  # type: ignore[arg-type]

    async def specs_at_async(self, version: str | None) -> list[FunctionSpec]:
        """`specs_at` on the async client (blocking on the sync one when there is none)."""
        cached = self._cached(version)
        if cached is not None:
            return cached
        if self._aredis is None:
            return self.specs_at(version)
        with redis_errors("read the trigger table"):
            raw = await self._aredis.hgetall(self._keys.functions)
        return self._store(version, raw)  # type: ignore[arg-type]

    async def specs_async(self) -> list[FunctionSpec]:
        """`specs` on the async client (blocking on the sync one when there is none)."""
        if self._aredis is None:
            return self.specs()
        with redis_errors("read the trigger table"):
            version = await self._aredis.get(self._keys.functions_version)
        return await self.specs_at_async(version)  # type: ignore[arg-type]

    def planned(self) -> tuple[str, list[FunctionSpec]]:
        """The specs last loaded and the table version they are of, for a publisher to plan
        with (the publish script checks the version); `NEVER_LOADED` before any load."""
        with self._lock:
            return (NEVER_LOADED if self._version is None else self._version), self._specs

    def planned_for(self, name: str) -> tuple[str, list[FunctionSpec]]:
        """`planned`, keeping only the specs an event named `name` can start
        (`FunctionSpec.listens_to`, in id order), worked out once per name and table
        version: a publish then checks only those specs' data conditions."""
        with self._lock:
            version = NEVER_LOADED if self._version is None else self._version
            specs = self._by_name.get(name)
            if specs is None:
                specs = [spec for spec in self._specs if spec.listens_to(name)]
                if len(self._by_name) >= _NAMES_KEPT:
                    self._by_name.clear()  # names are unbounded (cron ids, custom events)
                self._by_name[name] = specs
            return version, specs

    @on_bus("read the trigger table")
    def reload(self, version: str) -> list[FunctionSpec]:
        """Load every spec and keep them as of `version` (the one the publish script saw)."""
        return self._store(version, self._redis.hgetall(self._keys.functions))  # type: ignore[arg-type]

    async def reload_async(self, version: str) -> list[FunctionSpec]:
        """`reload` on the async client (blocking on the sync one when there is none)."""
        if self._aredis is None:
            return self.reload(version)
        with redis_errors("read the trigger table"):
            raw = await self._aredis.hgetall(self._keys.functions)
        return self._store(version, raw)  # type: ignore[arg-type]

    def _cached(self, version: str | None) -> list[FunctionSpec] | None:
        with self._lock:
            if version is not None and version == self._version:
                return self._specs
        return None

    def _store(self, version: str | None, raw: dict[str, str]) -> list[FunctionSpec]:
        specs = [FunctionSpec.model_validate_json(v) for v in raw.values()]
        with self._lock:
            self._version = version
            self._specs = sorted(specs, key=lambda s: s.id)
            self._by_name = {}
            return self._specs
