"""Redis is touched only by the engine and the records' Redis implementations.

Read from the source with `ast`: outside `harness/runtime/`, `harness/records/` and the
embedded Redis server the fleet can start (`harness/fleet/embedded_redis.py`), no module of
`harness` or `channels` imports `redis`, nor reads an attribute named `redis` (a runtime's
client: `runtime.redis`). Everyone else holds a `harness.records.stores.Records`, whose
stores may be the Redis implementations or their in-memory twins.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "channels")
MAY_TOUCH_REDIS = ("harness/runtime/", "harness/records/", "harness/fleet/embedded_redis.py")


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            yield relative, ast.parse(path.read_text(), filename=relative)


def _outside_the_seam() -> Iterator[tuple[str, ast.Module]]:
    for relative, tree in _modules():
        if not relative.startswith(MAY_TOUCH_REDIS):
            yield relative, tree


def _imports_redis(node: ast.AST) -> TypeGuard[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "redis" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] == "redis"
    return False


def test_only_the_engine_and_the_records_import_redis() -> None:
    # Given every module of harness and channels outside the Redis seam
    # When their imports are read
    found = [
        f"{relative}:{node.lineno}"
        for relative, tree in _outside_the_seam()
        for node in ast.walk(tree)
        if _imports_redis(node)
    ]
    # Then none imports redis
    assert found == [], f"redis imported outside {MAY_TOUCH_REDIS}: {found}"


def test_only_the_engine_and_the_records_read_a_redis_client() -> None:
    # Given every module of harness and channels outside the Redis seam
    # When their attribute reads are listed
    found = [
        f"{relative}:{node.lineno}"
        for relative, tree in _outside_the_seam()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "redis"
    ]
    # Then none reads a `.redis` (the runtime's client): they take a `Records` instead
    assert found == [], (
        f"a Redis client read outside {MAY_TOUCH_REDIS}: {found}; take the stores from "
        "harness.records.stores.Records (redis_records(runtime)) instead"
    )


def test_the_seam_sees_the_engine_reading_its_client() -> None:
    # Given the modules the seam lets touch Redis
    inside = [relative for relative, _ in _modules() if relative.startswith(MAY_TOUCH_REDIS)]
    # Then the scan finds them (a moved tree would make the checks above pass vacuously)
    assert "harness/runtime/instance.py" in inside
    assert "harness/records/stores.py" in inside
    assert "harness/fleet/embedded_redis.py" in inside
