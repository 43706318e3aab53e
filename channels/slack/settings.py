"""Slack settings, read from the environment and `.env`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from channels.base import parse_allowlist

DEFAULT_BASE_URL = "https://slack.com/api/"


class SlackSettings(BaseSettings):
    """Everything the Slack channel reads. Field names map to upper-case variables."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    slack_bot_token: SecretStr | None = Field(default=None, description="xoxb- bot token.")
    slack_signing_secret: SecretStr | None = Field(
        default=None, description="Verifies webhooks; without it every webhook is refused."
    )
    slack_app_token: SecretStr | None = Field(
        default=None,
        description="xapp- app-level token: receive events over Socket Mode (harness poll slack).",
    )
    slack_allowed_channels: Annotated[frozenset[str], NoDecode] = Field(
        default=frozenset(),
        description="Comma-separated channel (or user) ids always served; see DM_POLICY.",
    )
    dm_policy: Literal["pairing", "allowlist", "open"] = Field(
        default="pairing", description="Read here too: `allowlist` drops unlisted ids early."
    )
    slack_api_base_url: str = Field(default=DEFAULT_BASE_URL)
    slack_stream_replies: bool | None = Field(
        default=None,
        description="Draw replies as they are written (one message, updated); unset follows "
        "STREAM_REPLIES.",
    )
    slack_draft_every: float = Field(
        default=1.2,
        gt=0.0,
        description="Seconds between two updates of a streamed draft (chat.update is Tier 3, "
        "about 50 a minute per workspace).",
    )
    public_url: str | None = Field(default=None, description="Public https base URL.")
    agent_name: str = Field(default="Harness")

    @field_validator("slack_allowed_channels", mode="before")
    @classmethod
    def _split_channels(cls, value: object) -> frozenset[str]:
        return parse_allowlist(value)

    @field_validator("slack_api_base_url")
    @classmethod
    def _ends_in_api(cls, value: str) -> str:
        value = value if value.endswith("/") else value + "/"
        if not value.endswith("/api/"):
            raise ValueError("SLACK_API_BASE_URL must end in /api/ (slack_sdk appends methods)")
        return value
