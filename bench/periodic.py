"""A sampler that runs on a thread of its own for the length of a `with` block.

A subclass says what one sample is (`sample`); `PeriodicSampler` takes one as the block
starts (on the caller's thread, so there is one before the block's work begins), one every
`every` seconds while it runs, and a last one as it ends.

    class Peak(PeriodicSampler):
        def sample(self) -> None: ...
    with Peak(every=0.2) as peak:
        work()
"""

from __future__ import annotations

import threading
from typing import Self


class PeriodicSampler:
    """Calls `sample()` as the block starts, every `every` seconds on a daemon thread named
    `name`, and as it ends. Not reusable: one block per sampler."""

    def __init__(self, every: float, name: str) -> None:
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def sample(self) -> None:
        """Take one sample. Runs on the sampler's thread, and on the caller's at each end."""
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self) -> Self:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
