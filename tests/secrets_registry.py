"""Starting a test with no registered secret, as a fresh process does."""

from __future__ import annotations

import pytest

from harness import redaction


def forget_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the test ends, no value is registered for redaction: other tests in the process
    registered their settings' secrets, which would hide what this one checks."""
    monkeypatch.setattr(redaction, "_secrets", frozenset())
    monkeypatch.setattr(redaction, "_literal", None)
