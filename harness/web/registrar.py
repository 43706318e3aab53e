"""The web process registers the built-in functions' triggers itself.

Workers register their functions when they start; until one has, on a fresh Redis, an event
matches no function and is dropped ("0 run(s)"). The web server accepts messages from its
first second, so it registers the built-in functions too: an event published before any
worker is up is routed, and its run waits in the queue for a worker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from harness.fleet.restarts import Backoff
from harness.runtime import Runtime
from harness.runtime.banner import START_UP_ONLY
from harness.runtime.module_loader import load_function_modules

log = logging.getLogger(__name__)


class FunctionRegistrar:
    """A daemon thread that imports `modules` and writes their functions' specs to the trigger
    table (`Runtime.register_functions`), retrying with `backoff` until it succeeds (Redis down
    at start does not stop the web server), then exits. `registered` is set on success."""

    def __init__(
        self,
        runtime_factory: Callable[[], Runtime],
        modules: Iterable[str],
        backoff: Backoff | None = None,
    ) -> None:
        self._runtime_factory, self._modules = runtime_factory, tuple(modules)
        self._backoff = backoff or Backoff(initial=0.5, cap=10.0)
        self.registered = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="register-functions", daemon=True)

    def start(self) -> FunctionRegistrar:
        """Start the thread. Returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Give up retrying (the thread ends at its next wait)."""
        self._stop.set()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                load_function_modules(self._modules)
                count = self._runtime_factory().register_functions()
            except Exception as exc:  # Redis down or not found yet: try again
                failures += 1
                delay = self._backoff.delay(failures)
                log.warning(
                    "could not register the built-in functions (%s); retrying in %.1f s",
                    type(exc).__name__,
                    delay,
                )
                self._stop.wait(delay)
                continue
            # after a retry it is news; else routine, held back in a quiet start
            extra = START_UP_ONLY if failures == 0 else None
            log.info("web registered %d built-in function(s)", count, extra=extra)
            self.registered.set()
            return
