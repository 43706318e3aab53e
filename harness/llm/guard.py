"""A switch that keeps tests from reaching real model APIs.

With `HARNESS_FORBID_REAL_MODELS=1` in the environment, provider constructors refuse any
base URL whose host is not a loopback address, so a test that forgot to point a provider at
the scripted model server fails loudly instead of spending money.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from harness.llm.errors import PermanentModelError

FORBID_ENV = "HARNESS_FORBID_REAL_MODELS"


def forbid_real_model_calls() -> None:
    """Turn the guard on for this process (and the children it starts). Idempotent."""
    os.environ[FORBID_ENV] = "1"


def real_model_calls_forbidden() -> bool:
    """Whether the guard is on."""
    return os.environ.get(FORBID_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def is_loopback_url(url: str) -> bool:
    """Whether `url`'s host is `localhost` or a loopback address (127.0.0.0/8, ::1)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str) -> None:
    """Raise `PermanentModelError` if the guard is on and `base_url` is not on loopback."""
    if real_model_calls_forbidden() and not is_loopback_url(base_url):
        raise PermanentModelError(
            f"real model calls are forbidden under tests ({FORBID_ENV} is set); "
            f"refusing base URL host {urlsplit(base_url).hostname!r}"
        )
