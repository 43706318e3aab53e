"""redact_url: URLs in logs never carry a password."""

from __future__ import annotations

from harness.urls import redact_url


def test_redact_url_hides_the_password_and_keeps_the_rest() -> None:
    assert redact_url("redis://:s3cr%2Ft@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert redact_url("redis://user:pw@host/1") == "redis://user:***@host/1"


def test_redact_url_leaves_a_url_without_password_alone() -> None:
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert redact_url("not a url") == "not a url"
