"""Telegram settings, read from the environment and `.env`."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from channels.base import parse_allowlist
from channels.telegram.transform import GroupTrigger

DEFAULT_BASE_URL = "https://api.telegram.org"
"""The Bot API's address (TELEGRAM_API_BASE_URL overrides it, for a fake or a local server)."""

_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class TelegramSettings(BaseSettings):
    """Everything the Telegram channel reads. Field names map to upper-case variables."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    telegram_bot_token: SecretStr | None = Field(default=None, description="From @BotFather.")
    telegram_webhook_secret: SecretStr | None = Field(
        default=None,
        description="Sent by Telegram in X-Telegram-Bot-Api-Secret-Token; 1-256 of A-Za-z0-9_-. "
        "Required in webhook mode: without it every webhook is refused.",
    )
    telegram_allowed_chats: Annotated[frozenset[str], NoDecode] = Field(
        default=frozenset(),
        description="Comma-separated chat ids always served; see DM_POLICY for the others.",
    )
    telegram_group_trigger: GroupTrigger = Field(
        default="mention",
        description="In groups, answer only messages that mention or reply to the bot "
        "(`mention`), or every message (`all`).",
    )
    dm_policy: Literal["pairing", "allowlist", "open"] = Field(
        default="pairing", description="Read here too: `allowlist` drops unlisted chats early."
    )
    telegram_api_base_url: str = Field(default=DEFAULT_BASE_URL)
    telegram_mode: Literal["webhook", "polling"] = Field(default="webhook")
    telegram_stream_replies: bool | None = Field(
        default=None,
        description="Draw replies as they are written (one message, edited); unset follows "
        "STREAM_REPLIES.",
    )
    telegram_draft_previews: bool = Field(
        default=True,
        description="In private chats, stream drafts as sendMessageDraft previews (Bot API "
        "9.3+) instead of a message edited in place; falls back by itself when the Bot API "
        "refuses the method.",
    )
    telegram_draft_every: float = Field(
        default=1.0,
        gt=0.0,
        description="Seconds between two edits of a streamed draft in a private chat; groups "
        "wait three times as long (Telegram: about 1 message/s per chat, 20/min per group).",
    )
    public_url: str | None = Field(
        default=None, description="Public https base URL of the web server, for setWebhook."
    )

    @field_validator("telegram_allowed_chats", mode="before")
    @classmethod
    def _split_chats(cls, value: object) -> frozenset[str]:
        return parse_allowlist(value)

    @field_validator("telegram_webhook_secret")
    @classmethod
    def _secret_is_valid(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not _SECRET.match(value.get_secret_value()):
            raise ValueError("TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Za-z0-9_-")
        return value
