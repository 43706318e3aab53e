"""Reading a settings class, and turning its validation errors into lines a person can act on.

    settings = read_settings(TelegramSettings)  # InvalidSettingsError, never ValidationError

Every settings class in the project (`harness.settings`, `harness.llm.settings`,
`channels/<platform>/settings.py`) is read through here, so `harness <anything>` with a bad
`.env` prints `PORT: ... (got 'abc'); e.g. PORT=8000` instead of a pydantic traceback.

The `.env` read is the current folder's, unless `read_dotenv_in(folder)` named another: the CLI
does so to use the settings of a fleet running elsewhere (`harness.fleet.follow`). Relative
paths then count from that folder, as they do for the fleet's processes, which run there.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from harness.credentials import CREDENTIAL_NAME, register_credentials
from harness.errors import InvalidSettingsError

SettingsT = TypeVar("SettingsT", bound=BaseSettings)

# Values of URL variables are never echoed back either: they may hold a password.
_URL_NAME = re.compile(r"_URL$")
_PYDANTIC_PREFIX = re.compile(r"^(Value error|Assertion failed), ")
_dotenv_folder: list[Path] = []  # at most one: the folder whose `.env` is read instead of ours


def read_dotenv_in(folder: Path | None) -> None:
    """From now on, `read_settings` reads `folder/.env` (None: the current folder's, as at
    start) and resolves relative paths against `folder`. Cached settings are not re-read:
    the caller clears its caches."""
    _dotenv_folder.clear()
    if folder is not None:
        _dotenv_folder.append(folder.expanduser().resolve())


def dotenv_folder() -> Path | None:
    """The folder `read_dotenv_in` named, or None when the current folder's `.env` is read."""
    return _dotenv_folder[0] if _dotenv_folder else None


def read_settings(cls: type[SettingsT]) -> SettingsT:
    """`cls()` read from the environment and `.env` (see `read_dotenv_in`), its credentials
    (and those of the environment) registered for redaction in this process
    (`register_credentials`). Raises `InvalidSettingsError` with one line per invalid
    variable; never a pydantic `ValidationError`."""
    folder = dotenv_folder()
    try:
        settings = cls() if folder is None else cls(_env_file=folder / ".env")
    except ValidationError as exc:
        raise InvalidSettingsError(describe_problems(exc, cls)) from None
    if folder is not None:
        settings = _rebased(settings, folder)
    register_credentials(settings)
    return settings


def _rebased(settings: SettingsT, folder: Path) -> SettingsT:
    """`settings` with each relative path made relative to `folder` instead of the current
    folder (`~` paths are left alone: they are absolute to their reader)."""
    moved = {
        name: folder / value
        for name, value in settings
        if isinstance(value, Path) and not value.is_absolute() and not str(value).startswith("~")
    }
    return settings.model_copy(update=moved) if moved else settings


def describe_problems(exc: ValidationError, cls: type[BaseSettings]) -> list[str]:
    """One line per error in `exc`: `VARIABLE: what is wrong (got 'value'); e.g. VARIABLE=good`.
    Values of credentials and URLs are not repeated, since they may hold secrets."""
    lines = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else ""
        variable = name.upper()
        field = cls.model_fields.get(name)
        message = _PYDANTIC_PREFIX.sub("", str(error["msg"]))
        line = f"{variable}: {message}" if variable else message
        if field is not None and not _is_secret(variable, field) and "input" in error:
            line += f" (got {error['input']!r})"
        example = _example(field) if field is not None else None
        if example:
            line += f"; e.g. {variable}={example}"
        lines.append(line)
    return lines


def _is_secret(variable: str, field: FieldInfo) -> bool:
    named = CREDENTIAL_NAME.search(variable) or _URL_NAME.search(variable)
    return bool(named) or SecretStr in _leaves(field.annotation)


def _example(field: FieldInfo) -> str | None:
    if field.examples:
        return str(field.examples[0])
    default = field.default
    if default is not None and not isinstance(default, SecretStr) and str(default) != "":
        return str(default).lower() if isinstance(default, bool) else str(default)
    for leaf in _leaves(field.annotation):
        if isinstance(leaf, str):
            return leaf  # the first choice of a Literal
    return None


def _leaves(annotation: Any) -> list[Any]:
    """The types and Literal values inside `annotation` (through `X | None`, `Literal[...]`,
    `Annotated[...]`)."""
    if annotation is None:
        return []
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return list(typing.get_args(annotation))
    if origin is None:
        return [annotation]
    return [leaf for arg in typing.get_args(annotation) for leaf in _leaves(arg)]
