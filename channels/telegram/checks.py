"""`harness doctor`'s checks of Telegram: the bot token, the webhook and its secret, through
the client the channel uses. Tokens are never printed. Offline, the client is not imported."""

from __future__ import annotations

from channels.errors import PlatformError
from channels.telegram.settings import TelegramSettings
from harness.checks import SKIPPED, Check
from harness.settings_errors import read_settings


def telegram_checks(offline: bool) -> list[Check]:
    """getMe and getWebhookInfo with TELEGRAM_BOT_TOKEN (unless `offline`);
    TELEGRAM_WEBHOOK_SECRET in webhook mode. Nothing when the token is unset. Raises only for
    an invalid setting."""
    settings = read_settings(TelegramSettings)
    if settings.telegram_bot_token is None:
        return []
    checks = []
    if settings.telegram_mode == "webhook" and settings.telegram_webhook_secret is None:
        fix = "set TELEGRAM_WEBHOOK_SECRET (1-256 of A-Za-z0-9_-), or TELEGRAM_MODE=polling"
        detail = "TELEGRAM_WEBHOOK_SECRET is not set: every webhook will be refused"
        checks.append(Check("telegram secret", "fail", detail, fix))
    else:
        checks.append(Check("telegram secret", "ok", f"set ({settings.telegram_mode} mode)"))
    if offline:
        return [Check("telegram", "warn", SKIPPED), *checks]
    from channels.telegram.api import TelegramApi  # the HTTP client: only to call Telegram

    api = TelegramApi(
        settings.telegram_bot_token.get_secret_value(), settings.telegram_api_base_url
    )
    try:
        me = api.get_me()
        hook = api.call("getWebhookInfo", {}) or {}
    except PlatformError as exc:
        return [Check("telegram", "fail", str(exc), "check TELEGRAM_BOT_TOKEN"), *checks]
    finally:
        api.close()
    checks.insert(0, Check("telegram", "ok", f"bot @{me.get('username', '?')}"))
    url, error = str(hook.get("url") or ""), str(hook.get("last_error_message") or "")
    if settings.telegram_mode == "polling":
        if url:
            checks.append(Check("telegram webhook", "warn", f"set to {url} while polling",
                                "run `harness setup telegram` to remove it"))  # fmt: skip
    elif not url:
        fix = "set PUBLIC_URL, then run `harness setup telegram`"
        checks.append(Check("telegram webhook", "fail", "not set", fix))
    elif error:
        checks.append(Check("telegram webhook", "warn", f"{url}: last error {error!r}"))
    else:
        checks.append(Check("telegram webhook", "ok", url))
    return checks
