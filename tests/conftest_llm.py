"""Pytest plugin for the model layer: no real model calls, and a scripted model server.

Register it from the root conftest with `pytest_plugins = ["tests.conftest_llm"]`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.llm.guard import FORBID_ENV, forbid_real_model_calls
from tests.fakes.model_server import ModelServer


def pytest_configure(config: pytest.Config) -> None:
    """Forbid real model calls for the whole session, so worker subprocesses inherit it."""
    forbid_real_model_calls()


@pytest.fixture(autouse=True)
def _forbid_real_model_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with real model calls forbidden: providers refuse non-loopback URLs."""
    monkeypatch.setenv(FORBID_ENV, "1")


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A running scripted model server (`.url`, `.openai_url`, `.script(...)`, `.requests`).

    Fails the test at teardown if a request arrived with no scripted reply left.
    """
    with ModelServer() as server:
        yield server
    assert server.unscripted == 0, (
        f"{server.unscripted} model request(s) arrived with no scripted reply; "
        "script one Reply per expected call"
    )
