"""`MODEL_PRICES`: a user's own model prices, added to or overriding the built-in table.

The setting is a path to a JSON file, or the JSON itself:
`{"my-model": {"input": 1.0, "output": 5.0, "cache_read": 0.1, "source": "our contract"}}`
in USD per million tokens. A bad value raises `ConfigurationError` naming the problem.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import ConfigurationError
from harness.llm import pricing


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float = Field(default=0.0, ge=0)
    cache_write: float = Field(default=0.0, ge=0)
    source: str = "MODEL_PRICES"
    as_of: str = ""


def parse(setting: str) -> dict[str, pricing.Price]:
    """The prices in `setting` (a JSON file path or inline JSON); {} for an empty setting.
    Raises `ConfigurationError` for an unreadable file or invalid JSON or entries."""
    text = setting.strip()
    if not text:
        return {}
    if not text.startswith("{"):
        try:
            text = Path(text).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"MODEL_PRICES: cannot read {setting!r}: {exc}") from exc
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("expected an object of model names")
        entries = {str(name): _Entry.model_validate(body) for name, body in raw.items()}
    except (ValueError, ValidationError) as exc:
        raise ConfigurationError(f"MODEL_PRICES: invalid prices: {exc}") from exc
    return {name: pricing.Price(**entry.model_dump()) for name, entry in entries.items()}


def apply(setting: str) -> None:
    """Replace this process's overrides with those in `setting` (see `parse`)."""
    prices = parse(setting)
    pricing.OVERRIDES.clear()
    pricing.OVERRIDES.update(prices)
