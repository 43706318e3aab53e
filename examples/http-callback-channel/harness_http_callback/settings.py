"""What the channel reads from the environment and `.env`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from channels.base import parse_allowlist


class HttpCallbackSettings(BaseSettings):
    """Everything the HTTP-callback channel reads. Field names map to upper-case variables."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    http_callback_secret: SecretStr | None = Field(
        default=None,
        description="Shared with the other side: signs webhooks in and callbacks out.",
    )
    http_callback_url: str | None = Field(
        default=None, description="Where replies are POSTed, e.g. https://example.com/agent."
    )
    http_callback_allowed_chats: Annotated[frozenset[str], NoDecode] = Field(
        default=frozenset(),
        description="Comma-separated chat ids always served; see DM_POLICY for the others.",
    )
    http_callback_timeout: float = Field(default=10.0, gt=0.0)

    @field_validator("http_callback_allowed_chats", mode="before")
    @classmethod
    def _split(cls, raw: object) -> frozenset[str]:
        return parse_allowlist(raw)
