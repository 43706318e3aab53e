"""Redaction: every credential shape is masked wherever it sits, and the cheap tests that
decide which patterns run never skip one that would match."""

from __future__ import annotations

import random

import pytest

from harness.redaction import (
    MASK,
    SHAPES,
    _mask_match,
    redact,
    redact_registered,
    register_secret,
)
from harness.runtime.previews import INPUT_PREVIEW_CHARS, preview, step_preview
from tests.secrets_registry import forget_registered_secrets

TELEGRAM = "123456789:AAH" + "q" * 32
# One of each shape, with the part that must never be shown.
PLANTED = {
    "sk-ant-api03-" + "a1B2" * 6: "a1B2a1B2",
    "sk-proj-" + "Z" * 24: "ZZZZZZZZ",
    "xoxb-123456789012-PAGETOKENsecret": "PAGETOKEN",
    "xapp-1-A0123-abcdefghij": "abcdefghij",
    TELEGRAM: "AAHqqqq",
    "ghp_" + "k" * 30: "kkkkkkkk",
    "AKIA" + "QWERTYUIOP123456": "QWERTYUIOP",
    "BeArEr abc.def-ghi_jkl": "abc.def-ghi",
    "password=hunter2222": "hunter2222",
    "Passwd : swordfish99": "swordfish99",
    "SECRET= whsec_0123456": "whsec_0123456",
    "api_key:ABCDEF123456": "ABCDEF123456",
    "Token =  abcdefgh12": "abcdefgh12",
    "redis://:hunter2pass@localhost:6379/0": "hunter2pass",
    "rediss://default:p%40ss:w0rd@10.0.0.1": "w0rd",
}


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no registered value: other tests in the process register
    their settings (a Slack token "xoxb-1" once made these fail in CI only)."""
    forget_registered_secrets(monkeypatch)


def _unguarded(text: str) -> str:
    """What redaction must equal: every shape's pattern run, in order, on every text."""
    for pattern in SHAPES.values():
        text = pattern.sub(_mask_match, text)
    return text


@pytest.mark.parametrize("secret", list(PLANTED))
def test_redact_masks_each_shape_in_prose_json_and_after_a_leading_colon(secret: str) -> None:
    # Given the secret in a sentence, in a step's input (previewed as JSON), and in text
    # that starts with ':' (a Telegram token there was once missed)
    shown = PLANTED[secret]
    places = {
        "prose": redact(f"the call failed: {secret} (retrying)"),
        "json": preview({"note": "see", "env": [1, 2, f"{secret} here"], "n": 3}),
        "input": step_preview(({"cmd": "echo", "out": secret},), {}, None),
        "colon": redact(f":{secret}"),
    }
    # Then no place shows it, and each says something was masked
    for place, text in places.items():
        assert shown not in text and MASK in text, f"{place}: {text!r}"


def test_redact_equals_every_pattern_run_unguarded() -> None:
    # Given texts built from secrets, near misses and the characters the guards look for
    pieces = [
        *PLANTED,
        '"password":"hunter22"', '"token": "abcdefgh12"', "secret ", "api-key", "TOKEN",
        ":", '":', "=", " = ", "-", "_", "K", "gh", "AKIA", "sk-", "xox", "bearer", " " * 40,
        "\t", "\n", "\u00a0", "x" * 30, "12345678", "İ", "é", '"', "note", "x=1",
        "redis://", "://", "@", "user", ":pw123456@", "/", "host:6379",
    ]  # fmt: skip
    rng = random.Random(13)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        # When it is redacted, Then the result is what running every pattern gives
        assert redact(text) == _unguarded(text), repr(text)


def test_input_preview_is_bounded_and_redacts_a_secret_cut_by_its_limit() -> None:
    # Given a step input whose Telegram token starts just before the input preview's limit
    given = "a" * (INPUT_PREVIEW_CHARS - 20) + " " + TELEGRAM
    # When the step's record fields are built
    fields = step_preview((given,), {}, None)
    # Then the preview is bounded and shows no part of the token's secret half
    assert len(fields) <= len(',"i":""') + INPUT_PREVIEW_CHARS and "AAHqq" not in fields, fields


def test_a_registered_value_that_starts_a_longer_token_masks_the_whole_token() -> None:
    # Given a setting registered as secret that is the start of a longer Slack token
    register_secret("xoxb-1")
    # When text holding the longer token, and text holding the value alone, are redacted
    shown = redact("the call failed: xoxb-123456789012-PAGETOKENsecret (retrying)")
    alone = redact("token xoxb-1 set")
    # Then no part of the token's tail is shown, and the value alone is masked
    assert "PAGETOKEN" not in shown and "23456789012" not in shown and MASK in shown, shown
    assert alone == f"token {MASK} set", alone


def test_redact_keeps_a_urls_user_and_host_and_masks_its_password() -> None:
    # Given a Redis URL with a user and a password, in a sentence
    text = "cannot reach redis://default:s3cr3t-pw@redis.internal:6379/0 (timeout)"
    # When it is redacted
    shown = redact(text)
    # Then the user, host and port stay readable and the password is gone
    assert shown == f"cannot reach redis://default:{MASK}@redis.internal:6379/0 (timeout)", shown


def test_redact_registered_masks_registered_values_and_leaves_shapes_alone() -> None:
    # Given a registered password, and text that also holds a credential-shaped example
    register_secret("Xq7-registered-pw")
    text = "conf: password=example123 and the real one Xq7-registered-pw"
    # When only registered values are masked
    shown = redact_registered(text)
    # Then the registered value is gone and the example stays as the agent wrote it
    assert shown == f"conf: password=example123 and the real one {MASK}", shown
