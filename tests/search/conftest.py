"""Each search test leaves no watcher thread behind: the process's shared freshness (which a
`SearchTool` made without one uses) is closed after every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.search.freshness import close_shared


@pytest.fixture(autouse=True)
def _no_watcher_left() -> Iterator[None]:
    yield
    close_shared()
