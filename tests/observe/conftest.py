"""The agent fixtures, for observing real agent runs."""

from __future__ import annotations

from tests.agent.conftest import agent

__all__ = ["agent"]
