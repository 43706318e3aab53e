"""The trigger table: function specs in Redis, so any process can fan events out to them."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import redis

from harness.runtime.functions import FunctionSpec
from harness.runtime.keys import Keys


class TriggerTable:
    """Reads and writes function specs. Reads are cached until the table's version changes,
    so a publish costs one GET when nothing was registered since the last one."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._redis = client
        self._keys = keys
        self._lock = threading.Lock()
        self._version: str | None = None
        self._specs: list[FunctionSpec] = []

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

    def unregister(self, function_ids: Iterable[str]) -> None:
        """Remove specs; events published afterwards no longer reach these functions."""
        ids = list(function_ids)
        if ids:
            pipe = self._redis.pipeline()
            pipe.hdel(self._keys.functions, *ids)
            pipe.incr(self._keys.functions_version)
            pipe.execute()

    def specs(self) -> list[FunctionSpec]:
        """Every registered spec, fresh as of this call's version check."""
        return self.specs_at(self._redis.get(self._keys.functions_version))  # type: ignore[arg-type]

    def specs_at(self, version: str | None) -> list[FunctionSpec]:
        """Every registered spec, given the table's version read by the caller (so it can
        batch that read with others); reloads only when the version changed."""
        with self._lock:
            if version is not None and version == self._version:
                return self._specs
        raw = self._redis.hgetall(self._keys.functions)
        specs = [FunctionSpec.model_validate_json(v) for v in raw.values()]
        with self._lock:
            self._version = version
            self._specs = sorted(specs, key=lambda s: s.id)
            return self._specs
