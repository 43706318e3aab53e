"""Setting the channel up: what `harness doctor` checks of it and what `harness setup
http-callback` prints before it is configured (the `checks` and `unconfigured_report` hooks
of its `ChannelPlugin`)."""

from __future__ import annotations

from urllib.parse import urlsplit

from harness.checks import Check
from harness.settings_errors import read_settings
from harness_http_callback.channel import CHANNEL
from harness_http_callback.settings import HttpCallbackSettings

NEEDED = ("HTTP_CALLBACK_SECRET", "HTTP_CALLBACK_URL")


def checks(offline: bool) -> list[Check]:
    """Both settings are present when either is, and where replies go (host only: the URL may
    carry credentials). Nothing when neither is set. Calls nothing, so `offline` changes
    nothing: a test POST would be a message to the other program."""
    settings = read_settings(HttpCallbackSettings)
    present = {
        "HTTP_CALLBACK_SECRET": settings.http_callback_secret is not None,
        "HTTP_CALLBACK_URL": settings.http_callback_url is not None,
    }
    if not any(present.values()):
        return []
    missing = [name for name in NEEDED if not present[name]]
    if missing:
        detail = f"{', '.join(missing)} not set: the channel is off"
        return [Check(CHANNEL, "fail", detail, f"set {' and '.join(missing)}")]
    host = urlsplit(settings.http_callback_url or "").hostname or "?"
    return [Check(CHANNEL, "ok", f"replies are POSTed to {host}")]


def unconfigured_report() -> str:
    """What to set before the channel runs. Never raises."""
    return (
        f"{CHANNEL}: set {' and '.join(NEEDED)} (shared with the other program, and where "
        f"replies go); it then POSTs signed messages to <PUBLIC_URL>/webhooks/{CHANNEL}."
    )
