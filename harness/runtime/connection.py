"""Finding and connecting to Redis: `REDIS_URL`, or the embedded server `harness up` started."""

from __future__ import annotations

from pathlib import Path

from harness.errors import ConfigurationError
from harness.settings import Settings


def embedded_url_file(workspace: Path) -> Path:
    """Where a running embedded Redis writes its URL, so sibling processes can find it."""
    return workspace / ".harness" / "redis" / "url"


def resolve_redis_url(settings: Settings) -> str:
    """`REDIS_URL`, else the URL of the embedded server started by `harness up`.

    Raises `ConfigurationError` saying what to do when neither exists.
    """
    if settings.redis_url:
        return settings.redis_url
    url_file = embedded_url_file(settings.agent_workspace)
    if url_file.exists():
        return url_file.read_text().strip()
    raise ConfigurationError(
        "REDIS_URL is not set and no embedded Redis is running: set REDIS_URL, or start the "
        "fleet with `harness up`, which starts one"
    )
