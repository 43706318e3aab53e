"""Setting Slack up: Slack apps are created from a manifest, which we print."""

from __future__ import annotations

import re
from typing import Any

import yaml

from channels.errors import PlatformError
from channels.slack.api import SlackApi
from channels.slack.settings import SlackSettings
from harness.events.commands import COMMANDS
from harness.settings_errors import read_settings

WEBHOOK_PATH = "/webhooks/slack"
BOT_SCOPES = [
    "app_mentions:read",
    "channels:history",
    "groups:history",
    "im:history",
    "im:read",
    "chat:write",
    "reactions:write",
    "users:read",
    "files:read",  # download what people share (url_private)
    "files:write",  # send_file (files.getUploadURLExternal / completeUploadExternal)
    "commands",  # the slash command (`commands.py`)
]
BOT_EVENTS = ["app_mention", "message.im", "message.channels", "message.groups"]


def slash_command(agent_name: str) -> str:
    """The app's one slash command, `/<agent name>` in lower case (`/harness status`): Slack's
    own commands (`/status`, `/remind`, ...) and other apps' may not be taken."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", agent_name.lower()).strip("-")[:31]
    return "/" + (slug or "agent")


def manifest(
    public_url: str | None, agent_name: str = "Harness", *, socket_mode: bool = False
) -> dict[str, Any]:
    """The Slack app manifest: bot scopes, bot events and the Events API request URL
    (`PUBLIC_URL/webhooks/slack`, or a placeholder when `public_url` is None), and one slash
    command named for the agent (`slash_command`) taking the chat command as its text. With
    `socket_mode`, events and commands come over Socket Mode instead and there is no URL."""
    base = public_url.rstrip("/") if public_url else "https://YOUR-PUBLIC-URL"
    events: dict[str, Any] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, Any] = {"is_enabled": not socket_mode}
    slash: dict[str, Any] = {
        "command": slash_command(agent_name),
        "description": "Chat commands: " + ", ".join(COMMANDS),
        "usage_hint": " | ".join(COMMANDS),
        "should_escape": False,
    }
    if not socket_mode:
        events = {"request_url": base + WEBHOOK_PATH, **events}
        interactivity["request_url"] = base + WEBHOOK_PATH + "/interactions"  # approvals
        slash["url"] = base + WEBHOOK_PATH + "/commands"
    return {
        "display_information": {"name": agent_name, "description": f"{agent_name}, an agent"},
        "features": {
            "bot_user": {"display_name": agent_name, "always_online": True},
            "app_home": {
                "home_tab_enabled": False,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "slash_commands": [slash],
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }


def set_up(api: SlackApi, settings: SlackSettings) -> str:
    """A report: whether the bot token works (auth.test) and the manifest, as YAML, to create
    or update the app with. Never raises for a failing token: the report says so."""
    try:
        auth = api.auth_test()
        status = f"token OK: bot user {auth.get('user_id')} in team {auth.get('team')}"
    except PlatformError as exc:
        status = f"token check failed: {exc.description}"
    return "\n".join([f"Slack: {status}.", *_manifest_report(settings)])


def unconfigured_report() -> str:
    """What `harness setup slack` prints before there is a bot token: the manifest to create
    the app from (reading the environment for PUBLIC_URL and SLACK_APP_TOKEN), and what to set
    afterwards. Never raises for missing settings."""
    settings = read_settings(SlackSettings)
    lines = [
        "Slack: SLACK_BOT_TOKEN is not set. Create the app from the manifest below, install it "
        "to your workspace, then set SLACK_BOT_TOKEN (xoxb-...) and SLACK_SIGNING_SECRET "
        "(or SLACK_APP_TOKEN, xapp-..., for Socket Mode) and run this again."
    ]
    return "\n".join([*lines, *_manifest_report(settings)])


def _manifest_report(settings: SlackSettings) -> list[str]:
    socket_mode = settings.slack_app_token is not None
    lines = []
    if socket_mode:
        lines.append(
            "SLACK_APP_TOKEN is set: events come over Socket Mode, no public URL needed "
            "(the app-level token needs the connections:write scope)."
        )
    else:
        if not settings.public_url:
            lines.append("PUBLIC_URL is not set: replace the placeholder request URL below.")
        if settings.slack_signing_secret is None:
            lines.append("SLACK_SIGNING_SECRET is not set: every webhook will be refused.")
    lines.append("Create or update the app at https://api.slack.com/apps with this manifest:")
    body = yaml.safe_dump(
        manifest(settings.public_url, settings.agent_name, socket_mode=socket_mode),
        sort_keys=False,
    )
    return [*lines, "", body]
