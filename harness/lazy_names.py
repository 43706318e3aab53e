"""A package's public names loaded on first use (PEP 562), so that importing one of its
submodules does not import all the others with the package's `__init__`.

    __getattr__ = lazy_names(__name__, {"Runtime": "instance", "publish": "bus"})

The package lists the same names under `if TYPE_CHECKING:` for the type checker, and in
`__all__`. Why it matters: every `harness` command pays for what its imports pull in
(docs/benchmarks.md "Start-up").
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name of `homes` is read from the submodule
    it maps to (`"instance"`: `package.instance`), imported the first time the name is asked
    for, then kept on the package as a plain attribute. Any other name raises
    `AttributeError`, as a missing module attribute does."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
