"""Every test here is a chaos scenario: marked `chaos` (left out of the default run; run them
with `python -m pytest -m chaos`, sized by `CHAOS_SCALE`) and given time for a whole fleet."""

from __future__ import annotations

import pytest

from tests.chaos.scale import Scale, current


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder `chaos`, with a timeout fit for its scale."""
    for item in items:
        if "tests/chaos/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.chaos)
            item.add_marker(pytest.mark.timeout(3600 if current().name == "full" else 480))


@pytest.fixture(scope="session")
def scale() -> Scale:
    """The scenario sizes `CHAOS_SCALE` chose."""
    return current()
