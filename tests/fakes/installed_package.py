"""A package "installed" for one test: a `*.dist-info` directory with entry points, put on
`sys.path` where `importlib.metadata` finds installed packages, so plug-ins load through the
same door as a real install."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def installed_package(
    root: Path, name: str, group: str, entries: Mapping[str, str], reload: Callable[[], object]
) -> Iterator[None]:
    """Install package `name` under `root`, declaring `entries` (entry-point name: `module:attr`)
    in `group`, for the duration of the block; afterwards `reload()` loads the process's own
    plug-ins again."""
    dist_info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = [f"{entry} = {target}" for entry, target in entries.items()]
    (dist_info / "entry_points.txt").write_text(f"[{group}]\n" + "\n".join(lines) + "\n")
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        sys.path.remove(str(root))
        reload()
