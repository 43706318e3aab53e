"""Loading the modules that declare functions (`HARNESS_FUNCTION_MODULES`, `--functions`).

Apart from `harness.runtime.worker` (which uses it at start) so that a command that only loads
declarations (`harness runs replay`, the sidecar's built-in ids, the web's registrar) does not
import the worker's Celery signals with it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from harness.errors import ConfigurationError


def load_function_modules(modules: Iterable[str]) -> None:
    """Import each module so its `@function` declarations register themselves.

    Raises `ConfigurationError` naming the module that failed to import and where such
    modules are named (`HARNESS_FUNCTION_MODULES`, `--functions`).
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:
            raise ConfigurationError(
                f"cannot load function module {module!r} (check HARNESS_FUNCTION_MODULES and "
                f"--functions): {exc}"
            ) from exc
