"""Is a channel's token really set? An empty value (`TELEGRAM_BOT_TOKEN=` in a `.env` copied
from `.env.example`) means unset, whether or not the settings already read it that way, so
that a channel without a token starts no listener and calls no platform API."""

from __future__ import annotations

from pydantic import SecretStr

from channels.registry import channel_or_none


def blank_tokens(name: str, suffix: str = "_token") -> list[str]:
    """The settings fields of channel `name` ending in `suffix` that are set but blank
    (empty or whitespace). Empty for an unknown or unconfigured channel. Never raises."""
    channel = channel_or_none(name)
    settings = getattr(channel, "settings", None)
    if settings is None:
        return []
    blank = []
    for field in type(settings).model_fields:
        value = getattr(settings, field, None)
        if field.endswith(suffix) and isinstance(value, SecretStr):
            if not value.get_secret_value().strip():
                blank.append(field)
    return blank
