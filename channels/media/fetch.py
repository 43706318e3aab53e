"""Downloading a file over HTTP without ever holding more than a limit in memory: the one
download path of every channel (Telegram's file URL, Slack's `url_private`)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

from channels.errors import FileTooLarge, PermanentPlatformError, PlatformUnavailable


def fetch_bounded(
    client: httpx2.Client,
    url: str,
    headers: Mapping[str, str],
    max_bytes: int,
    platform: str,
    secret: str,
) -> tuple[bytes, str]:
    """GET `url` streaming, stopping with `FileTooLarge` past `max_bytes`; return the body and
    its content type. Network errors and 5xx raise `PlatformUnavailable`, other failures a
    `PermanentPlatformError`; `secret` is redacted from every message."""
    try:
        with client.stream("GET", url, headers=dict(headers), timeout=60.0) as response:
            if response.status_code >= 500 or response.status_code == 429:
                raise PlatformUnavailable(platform, "download", f"HTTP {response.status_code}")
            if response.status_code >= 400:
                raise PermanentPlatformError(platform, "download", f"HTTP {response.status_code}")
            declared = int(response.headers.get("Content-Length") or 0)
            if declared > max_bytes:
                raise FileTooLarge(platform, "download", f"{declared} bytes > {max_bytes}")
            chunks: list[bytes] = []
            total = 0
            for chunk in response.iter_bytes():
                total += len(chunk)
                if total > max_bytes:
                    raise FileTooLarge(platform, "download", f"more than {max_bytes} bytes")
                chunks.append(chunk)
            return b"".join(chunks), response.headers.get("Content-Type", "")
    except httpx2.HTTPError as exc:
        detail = f"{type(exc).__name__}: {exc}".replace(secret, "<token>") if secret else str(exc)
        raise PlatformUnavailable(platform, "download", detail) from None
