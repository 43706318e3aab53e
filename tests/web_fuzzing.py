"""What the web fuzz tests share (tests/chaos/test_fuzz_web.py on a real Redis,
tests/security/test_web_fuzz.py on fakeredis): the production app with both channels on fake
platform APIs, a count of the events it published, and JSON of any shape."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import FastAPI
from hypothesis import strategies as st
from pydantic import SecretStr

from channels import registry as channel_registry
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from harness.web.app import default_routers
from tests.channels.conftest import slack_settings, telegram_settings
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
"""Any JSON value, nested a few levels."""


@contextmanager
def production_app(runtime: Runtime, workspace: Path, api_key: str) -> Iterator[FastAPI]:
    """`harness web`'s app (every router) on `runtime`, with `api_key` as HARNESS_API_KEY and
    Telegram and Slack configured against fake APIs (secrets from tests/channels/conftest.py).
    The channel registry is reset on exit."""
    with FakeTelegramApi() as telegram_api, FakeSlackApi() as slack_api:
        telegram = TelegramChannel(telegram_settings(telegram_api))
        slack = SlackChannel(slack_settings(slack_api))
        channel_registry.reset()
        channel_registry.register("telegram", lambda: telegram)
        channel_registry.register("slack", lambda: slack)
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            harness_api_key=SecretStr(api_key),
            agent_workspace=workspace,
        )
        try:
            yield create_app(lambda: runtime, settings, routers=default_routers())
        finally:
            channel_registry.reset()
            telegram.api.close()


def published(runtime: Runtime) -> int:
    """How many events are on the bus."""
    return int(runtime.redis.xlen(runtime.keys.events))
