"""Registering the bot with Telegram: a webhook in webhook mode, none in polling mode."""

from __future__ import annotations

from channels.errors import ChannelNotConfiguredError
from channels.telegram.api import TelegramApi
from channels.telegram.settings import TelegramSettings
from harness.events.commands import COMMANDS

WEBHOOK_PATH = "/webhooks/telegram"
ALLOWED_UPDATES = ["message", "callback_query"]


def webhook_url(public_url: str) -> str:
    """Where Telegram should post updates, given the server's public base URL."""
    return public_url.rstrip("/") + WEBHOOK_PATH


def set_up(api: TelegramApi, settings: TelegramSettings) -> str:
    """In webhook mode, point the bot at `PUBLIC_URL/webhooks/telegram` with the secret token
    and `allowed_updates: ["message", "callback_query"]` (button presses); in polling mode,
    delete any webhook. Either way, register the chat commands (`setMyCommands`: the menu
    Telegram shows on `/`). Idempotent.
    Returns a one-line report quoting Telegram's answer. Raises `ChannelNotConfiguredError`
    when PUBLIC_URL or TELEGRAM_WEBHOOK_SECRET is missing (before any call), or a
    `PlatformError`."""
    if settings.telegram_mode == "polling":
        answer = api.delete_webhook()
        api.set_my_commands(COMMANDS)
        return f"Telegram: polling mode, no webhook ({answer}); {_menu()}"
    if not settings.public_url:
        raise ChannelNotConfiguredError("PUBLIC_URL is required to set the Telegram webhook")
    if settings.telegram_webhook_secret is None:
        raise ChannelNotConfiguredError("TELEGRAM_WEBHOOK_SECRET is required in webhook mode")
    url = webhook_url(settings.public_url)
    answer = api.set_webhook(
        url,
        secret_token=settings.telegram_webhook_secret.get_secret_value(),
        allowed_updates=ALLOWED_UPDATES,
    )
    api.set_my_commands(COMMANDS)
    return f"Telegram: webhook {url} (updates: {', '.join(ALLOWED_UPDATES)}): {answer}; {_menu()}"


def _menu() -> str:
    return "commands: " + " ".join(f"/{name}" for name in COMMANDS)
