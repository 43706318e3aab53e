"""All configuration, read once from the environment and `.env`.

Every field here is listed with its default in `.env.example` and the README.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from channels.slack.settings import SlackSettings
from channels.telegram.settings import TelegramSettings
from harness.llm.settings import ModelSettings
from harness.sidecar.settings import SidecarSettings

OnNewMessage = Literal["steer", "cancel", "queue"]


class Settings(ModelSettings, TelegramSettings, SlackSettings, SidecarSettings):
    """The one configuration object. Field names map to upper-case environment variables.

    The model and channel fields are declared next to the code that reads them (in
    `harness.llm.settings` and `channels/<platform>/settings.py`) and inherited here, so one
    object, read once, holds everything.
    """

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    redis_url: str | None = Field(
        default=None,
        description="Redis to use; unset starts an embedded Redis under the workspace.",
    )
    agent_workspace: Path = Field(default=Path("./workspace"))
    agent_name: str = Field(default="Harness")
    port: int = Field(default=8000, ge=1, le=65535)
    harness_api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the HTTP API; unset disables it."
    )
    on_new_message: OnNewMessage = Field(default="steer")
    log_level: str = Field(default="INFO")

    harness_function_modules: str = Field(
        default="",
        description="Comma-separated Python modules whose @function declarations workers load.",
    )
    worker_concurrency: int = Field(default=16, ge=1, le=512)
    harness_lease_ttl: float = Field(
        default=10.0, gt=0.5, description="Seconds a run's lease lives without renewal."
    )
    harness_reaper_interval: float = Field(default=1.0, gt=0.0)
    harness_retry_backoff: float = Field(
        default=1.0, ge=0.0, description="Base of the exponential backoff between retries, seconds."
    )
    harness_events_maxlen: int = Field(default=10_000, ge=100)
    harness_key_prefix: str = Field(default="harness")

    agent_max_iterations: int = Field(default=20, ge=1, le=200)
    agent_context_tokens: int = Field(default=150_000, ge=4_000)
    agent_allow_shell: bool = Field(default=True)
    agent_fetch_private_networks: bool = Field(
        default=False, description="Let web_fetch reach loopback and private addresses."
    )
    agent_timezone: str = Field(default="UTC", description="IANA zone for times and daily logs.")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read on first use."""
    return Settings()
