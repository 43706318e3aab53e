"""Errors raised by the channels. Platform and SDK errors are translated into these in each
platform's `api.py`, so nothing above a channel sees httpx2 or slack_sdk exceptions.

    HarnessError (harness.errors)
    └── ChannelError
        ├── UnknownChannelError            no channel is registered under that name
        ├── ChannelNotConfiguredError      settings are missing (also a ConfigurationError)
        ├── WebhookRejected                an inbound request failed verification (carries status)
        └── PlatformError                  a platform API call failed
            ├── TransientPlatformError     trying again later may work
            │   ├── PlatformUnavailable    network error, timeout or 5xx
            │   └── RateLimited            429; carries retry_after seconds
            └── PermanentPlatformError     the same call will fail again (also NonRetriableError)
                ├── MessageFormatError     the platform could not parse the formatting
                ├── MessageRejected        too long, empty or otherwise invalid content
                ├── AuthenticationError    the token is wrong or revoked
                └── DestinationError       the chat or channel is unknown or closed to the bot
"""

from __future__ import annotations

from harness.errors import ConfigurationError, HarnessError, NonRetriableError


class ChannelError(HarnessError):
    """Base of every error raised by `channels`."""


class UnknownChannelError(ChannelError, KeyError):
    """No channel is registered under the requested name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown channel {name!r}; known channels: {', '.join(known) or 'none'}")
        self.name = name

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class ChannelNotConfiguredError(ChannelError, ConfigurationError):
    """A channel was requested but the settings it needs (a token, a secret) are not set."""


class WebhookRejected(ChannelError):
    """An inbound webhook failed verification. `status` is the HTTP status to answer with;
    `reason` is safe to log and to return (it never contains a secret)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"webhook rejected ({status}): {reason}")
        self.status = status
        self.reason = reason


class PlatformError(ChannelError):
    """A call to a platform API failed. `description` is the platform's own error text, with any
    credential redacted."""

    def __init__(self, platform: str, method: str, description: str) -> None:
        super().__init__(f"{platform} {method} failed: {description}")
        self.platform = platform
        self.method = method
        self.description = description


class TransientPlatformError(PlatformError):
    """The call may succeed if tried again later. Nothing was posted."""


class PlatformUnavailable(TransientPlatformError):
    """The platform could not be reached, timed out or answered with a server error. For a post
    that timed out, the message may or may not have been delivered."""


class RateLimited(TransientPlatformError):
    """The platform asked us to slow down; try again after `retry_after` seconds."""

    def __init__(self, platform: str, method: str, description: str, retry_after: float) -> None:
        super().__init__(platform, method, f"{description} (retry after {retry_after:g} s)")
        self.retry_after = retry_after


class PermanentPlatformError(PlatformError, NonRetriableError):
    """Repeating the same call will fail the same way."""


class MessageFormatError(PermanentPlatformError):
    """The platform rejected the message's formatting (Telegram: "can't parse entities")."""


class MessageRejected(PermanentPlatformError):
    """The platform rejected the message's content: too long, empty or otherwise invalid."""


class AuthenticationError(PermanentPlatformError):
    """The platform rejected our credentials."""


class DestinationError(PermanentPlatformError):
    """The chat or channel does not exist, or the bot cannot post there (blocked, removed)."""


class FileTooLarge(PermanentPlatformError):
    """A file is larger than the limit we or the platform set for downloads
    (`MEDIA_MAX_BYTES`; Telegram bots may fetch at most 20 MB). Nothing was kept."""


def refuse_oversized(platform: str, call: str, size: int | None, max_bytes: int) -> None:
    """Raise `FileTooLarge` when the platform already says a file is larger than `max_bytes`,
    before anything is fetched. A size the platform does not state passes (the download itself
    is bounded)."""
    if size is not None and size > max_bytes:
        raise FileTooLarge(platform, call, f"{size} bytes > {max_bytes}")
