"""Every configured credential is registered for redaction when a process reads its settings:
each settings class's secret and credential-named fields and URL passwords, the environment's
and `.env`'s credential-named variables whichever class reads them, and the embedded Redis's
password found in the state folder."""

from __future__ import annotations

import importlib
import os
import re
import typing
from pathlib import Path

import pytest
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from harness.credentials import CREDENTIAL_NAME
from harness.fleet.embedded_redis import OWNER_NAME
from harness.redaction import MASK, redact
from harness.runtime.connection import resolve_redis_url
from harness.settings import Settings
from harness.settings_errors import read_settings
from harness.state_dir import redis_dir, redis_password, redis_url_file
from tests.secrets_registry import forget_registered_secrets

ROOT = Path(__file__).resolve().parent.parent
_DECLARES_SETTINGS = re.compile(r"^class \w+\([^)]*Settings\b", re.MULTILINE)


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No value registered yet, and no `.env` but the test's own (in its folder)."""
    forget_registered_secrets(monkeypatch)
    monkeypatch.chdir(tmp_path)


def _settings_classes() -> list[type[BaseSettings]]:
    """Every settings class declared in `harness` and `channels`, found from the source so a
    new one in any module is enumerated too."""
    found: dict[str, type[BaseSettings]] = {}
    for package in ("harness", "channels"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if not _DECLARES_SETTINGS.search(path.read_text()):
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = importlib.import_module(name.removesuffix(".__init__"))
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, BaseSettings)
                    and value.__module__ == module.__name__
                ):
                    found[f"{value.__module__}.{value.__name__}"] = value
    return list(found.values())


def _is_secret(field: FieldInfo) -> bool:
    annotation = field.annotation
    return annotation is SecretStr or SecretStr in typing.get_args(annotation)


def _is_text(field: FieldInfo) -> bool:
    annotation = field.annotation
    return annotation is str or str in typing.get_args(annotation)


def _credential_values(cls: type[BaseSettings]) -> dict[str, tuple[str, str]]:
    """For each field of `cls` that holds a credential: the variable, the value to set, and
    the part of it that must be masked (a URL field gets a URL with a password)."""
    values = {}
    for name, field in cls.model_fields.items():
        variable = name.upper()
        if _is_secret(field) or (_is_text(field) and CREDENTIAL_NAME.search(variable)):
            secret = f"cred-{name}-Zq81x"
            values[variable] = (secret, secret)
        elif _is_text(field) and name.endswith("_url"):
            password = f"pw-{name}-Zq81x"
            values[variable] = (f"https://user:{password}@example.com/api/", password)
    return values


def test_settings_classes_are_all_enumerated() -> None:
    # Given the project's source
    # When its settings classes are enumerated
    names = {cls.__name__ for cls in _settings_classes()}
    # Then the core, model, sidecar and both channels' classes are among them
    assert {"Settings", "ModelSettings", "SidecarSettings"} <= names, names
    assert {"TelegramSettings", "SlackSettings"} <= names, names


@pytest.mark.parametrize("cls", _settings_classes(), ids=lambda cls: cls.__name__)
def test_read_settings_registers_every_credential_field(
    cls: type[BaseSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given every secret field, credential-named field and URL field of the class set
    values = _credential_values(cls)
    for variable, (value, _) in values.items():
        monkeypatch.setenv(variable, value)
    # When a process reads the class (as every entry point does)
    read_settings(cls)
    # Then each credential, seen alone in some text, is masked
    for variable, (_, secret) in values.items():
        shown = redact(f"printed {secret} here")
        assert secret not in shown and MASK in shown, f"{variable} is not registered: {shown}"


def test_read_settings_registers_credentials_that_only_other_classes_declare(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a webhook secret in the environment and a signing secret in `.env`, which only
    # the channels' settings classes declare
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "whsecEnv0123456789")
    (tmp_path / ".env").write_text("SLACK_SIGNING_SECRET=signDotenv987654\n")
    # When a process reads only the core settings (as `harness runs show` does)
    read_settings(Settings)
    # Then both are masked
    shown = redact("whsecEnv0123456789 and signDotenv987654")
    assert shown == f"{MASK} and {MASK}", shown


def test_read_settings_leaves_ordinary_variables_unregistered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given ordinary settings whose names merely contain a credential word
    monkeypatch.setenv("AGENT_NAME", "Harnessbot")
    monkeypatch.setenv("HARNESS_KEY_PREFIX", "harnessprefix")
    monkeypatch.setenv("AGENT_CONTEXT_TOKENS", "150000")
    monkeypatch.setenv("TELEGRAM_API_BASE_URL", "https://api.telegram.org")
    # When the settings are read
    read_settings(Settings)
    # Then none of their values is masked
    text = "Harnessbot harnessprefix 150000 https://api.telegram.org"
    assert redact(text) == text


def test_resolve_redis_url_registers_the_embedded_redis_password(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a running fleet's embedded Redis, whose URL (with its password) is published in
    # the state folder, and no REDIS_URL
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    state = tmp_path / ".harness"
    url_file = redis_url_file(state)
    url_file.parent.mkdir(parents=True)
    url_file.write_text("redis://:EmbeddedPw-0123456789@127.0.0.1:6390/0\n")
    (redis_dir(state) / OWNER_NAME).write_text(str(os.getpid()))
    # When a CLI command finds it
    url = resolve_redis_url(read_settings(Settings))
    # Then the password alone is masked
    assert "EmbeddedPw-0123456789" in url
    assert redact("EmbeddedPw-0123456789") == MASK


def test_redis_password_is_registered_when_read(tmp_path: Path) -> None:
    # Given the embedded Redis's password, generated in the state folder
    password = redis_password(tmp_path)
    # When it is printed somewhere
    shown = redact(f"auth {password}")
    # Then it is masked
    assert shown == f"auth {MASK}", shown
