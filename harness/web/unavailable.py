"""The one answer every route gives when the event bus cannot be reached: 503 + Retry-After."""

from __future__ import annotations

from fastapi import HTTPException, status

from harness.errors import BusUnavailableError, ConfigurationError

RETRY_AFTER_S = 5

BUS_ERRORS: tuple[type[Exception], ...] = (BusUnavailableError, ConfigurationError)
"""What a route turns into `bus_unavailable()`: Redis failed, or none is configured (the
runtime factory raises `ConfigurationError`). Neither is the caller's fault."""


def bus_unavailable() -> HTTPException:
    """503 "event bus unavailable; retry later" with `Retry-After: 5`. Carries no detail of the
    cause (it may name hosts); log the cause's class where this is raised."""
    return HTTPException(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        "event bus unavailable; retry later",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )
