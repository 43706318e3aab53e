"""`harness doctor`'s checks of what lies beyond this machine: the model and the chat
platforms, each through the same client the fleet uses (`harness.llm`, `channels/*/api.py`),
and the webhook secrets each configured platform needs. Tokens are never printed.
"""

from __future__ import annotations

from harness.commands.check import Check
from harness.errors import ConfigurationError
from harness.llm.errors import ModelError
from harness.llm.factory import build_provider
from harness.llm.types import Message
from harness.settings import Settings

SKIPPED = "skipped (--offline)"


def model_checks(settings: Settings, *, offline: bool) -> list[Check]:
    """The model is configured (a key or base URL for LLM_PROVIDER) and answers a one-token
    request, unless `offline`. Never raises."""
    provider_name = settings.llm_provider
    key_var = f"{provider_name.upper()}_API_KEY"
    try:
        provider = build_provider(settings)
    except (ConfigurationError, ModelError) as exc:
        return [Check("model", "fail", str(exc), f"check LLM_PROVIDER and {key_var}")]
    if provider is None:
        fix = f"set {key_var} (or {provider_name.upper()}_BASE_URL for a compatible server)"
        return [Check("model", "fail", f"LLM_PROVIDER={provider_name} has no {key_var}", fix)]
    checks = [Check("model", "ok", f"{provider.name}, model {provider.model}")]
    if offline:
        checks.append(Check("model reachable", "warn", SKIPPED))
        provider.close()
        return checks
    try:
        provider.complete(system="", messages=[Message.user("ping")], max_tokens=1)
    except ModelError as exc:
        fix = f"check {key_var}, {provider_name.upper()}_BASE_URL and AGENT_MODEL"
        checks.append(Check("model reachable", "fail", str(exc), fix))
    else:
        checks.append(Check("model reachable", "ok", "answered a one-token request"))
    finally:
        provider.close()
    return checks


def channel_checks(*, offline: bool) -> list[Check]:
    """Telegram and Slack, for those whose bot token is set: the platform accepts the token,
    and the secret that authenticates webhooks is set. Never raises."""
    return telegram_checks(offline=offline) + slack_checks(offline=offline)


def telegram_checks(*, offline: bool) -> list[Check]:
    """getMe and getWebhookInfo with TELEGRAM_BOT_TOKEN; TELEGRAM_WEBHOOK_SECRET in webhook
    mode. Nothing when the token is unset."""
    from channels.errors import PlatformError
    from channels.telegram.api import TelegramApi
    from channels.telegram.settings import TelegramSettings
    from harness.settings_errors import read_settings

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


def slack_checks(*, offline: bool) -> list[Check]:
    """auth.test with SLACK_BOT_TOKEN; SLACK_SIGNING_SECRET unless Socket Mode
    (SLACK_APP_TOKEN). Nothing when the token is unset."""
    from channels.errors import PlatformError
    from channels.slack.api import SlackApi
    from channels.slack.settings import SlackSettings
    from harness.settings_errors import read_settings

    settings = read_settings(SlackSettings)
    if settings.slack_bot_token is None:
        return []
    checks = []
    if settings.slack_app_token is None and settings.slack_signing_secret is None:
        fix = "set SLACK_SIGNING_SECRET (Basic Information in the app's settings)"
        detail = "SLACK_SIGNING_SECRET is not set: every webhook will be refused"
        checks.append(Check("slack secret", "fail", detail, fix))
    else:
        mode = "socket mode" if settings.slack_app_token else "webhooks"
        checks.append(Check("slack secret", "ok", f"set ({mode})"))
    if offline:
        return [Check("slack", "warn", SKIPPED), *checks]
    api = SlackApi(settings.slack_bot_token.get_secret_value(), settings.slack_api_base_url)
    try:
        auth = api.auth_test()
    except PlatformError as exc:
        return [Check("slack", "fail", str(exc), "check SLACK_BOT_TOKEN"), *checks]
    bot = f"{auth.get('user', '?')} in {auth.get('team', '?')}"
    return [Check("slack", "ok", bot), *checks]
