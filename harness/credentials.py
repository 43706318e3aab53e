"""Which configured values are credentials, and registering them for redaction.

    register_credentials(settings)   # read_settings does it for every settings class

Every process reads its settings through `harness.settings_errors.read_settings` (web,
worker, scheduler, sidecar, poll and every CLI command), which calls `register_credentials`,
so no entry point can forget it. What it registers (`harness.redaction.register_secret`):

- every `SecretStr` field, and every text field whose name looks like a credential
  (`CREDENTIAL_NAME`: ends in KEY, TOKEN, SECRET or PASSWORD);
- the password of every field that holds a URL with one (`REDIS_URL=redis://:pw@host`);
- the same two from the process environment and the settings' `.env` file, whichever class
  reads them: the CLI reads only the core settings, yet must mask the webhook secret and the
  bot tokens that only a channel's settings class declares.

`register_url_password(url)` does the same for a URL found elsewhere (the embedded Redis's
URL, read from the state folder or a fleet record).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from urllib.parse import unquote, urlsplit

from pydantic import SecretStr
from pydantic_settings import BaseSettings, DotEnvSettingsSource

from harness.redaction import register_secrets

CREDENTIAL_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)$")
"""A setting or environment variable whose value is a credential (matched upper-cased)."""


def register_credentials(settings: BaseSettings) -> None:
    """Register every credential `settings` holds, and every credential-looking variable of
    the environment and of the settings' `.env` file, for redaction in this process (see the
    module docstring). Idempotent; never raises on an unreadable `.env` (the settings were
    read from it already, or it is absent)."""
    register_secrets(settings_credentials(settings))
    register_secrets(_named_credentials(os.environ))
    try:
        dotenv = DotEnvSettingsSource(type(settings)).env_vars
    except (OSError, UnicodeDecodeError):
        return
    register_secrets(_named_credentials(dotenv))


def register_url_password(url: str) -> None:
    """Register the password of `url`, if it has one. Never raises."""
    register_secrets(url_passwords(url))


def settings_credentials(settings: BaseSettings) -> Iterator[str]:
    """The credential values `settings` holds: its `SecretStr` fields, its text fields named
    like a credential, and the password of each URL among its text fields."""
    for name, value in settings.__dict__.items():
        if isinstance(value, SecretStr):
            yield value.get_secret_value()
        elif isinstance(value, str):
            if CREDENTIAL_NAME.search(name.upper()):
                yield value
            else:
                yield from url_passwords(value)


def url_passwords(text: str) -> list[str]:
    """The password of `text` when it is a URL with one, as written and percent-decoded;
    [] otherwise. Never raises."""
    if "://" not in text or "@" not in text:
        return []
    try:
        password = urlsplit(text.strip()).password
    except ValueError:
        return []
    return [password, unquote(password)] if password else []


def _named_credentials(variables: Mapping[str, str | None]) -> Iterator[str]:
    for name, value in variables.items():
        if not value:
            continue
        if CREDENTIAL_NAME.search(name.upper()):
            yield value
        else:
            yield from url_passwords(value)
