"""`harness doctor`'s checks of Slack: the bot token and the secret that authenticates its
webhooks, through the client the channel uses. Tokens are never printed. Offline, the Slack
SDK is not imported."""

from __future__ import annotations

from channels.errors import PlatformError
from channels.slack.settings import SlackSettings
from harness.checks import SKIPPED, Check
from harness.settings_errors import read_settings


def slack_checks(offline: bool) -> list[Check]:
    """auth.test with SLACK_BOT_TOKEN (unless `offline`); SLACK_SIGNING_SECRET unless Socket
    Mode (SLACK_APP_TOKEN). Nothing when the token is unset. Raises only for an invalid
    setting."""
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
    from channels.slack.api import SlackApi  # the Slack SDK: only to call Slack

    api = SlackApi(settings.slack_bot_token.get_secret_value(), settings.slack_api_base_url)
    try:
        auth = api.auth_test()
    except PlatformError as exc:
        return [Check("slack", "fail", str(exc), "check SLACK_BOT_TOKEN"), *checks]
    bot = f"{auth.get('user', '?')} in {auth.get('team', '?')}"
    return [Check("slack", "ok", bot), *checks]
