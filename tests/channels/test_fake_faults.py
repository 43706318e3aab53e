"""The fake Telegram API's random failures (the chaos suite's flaky platform)."""

from __future__ import annotations

import httpx2

from tests.fakes.telegram_api import FakeTelegramApi


def _send(fake: FakeTelegramApi, text: str) -> int:
    url = f"{fake.base_url}/bot{fake.token}/sendMessage"
    return httpx2.post(url, json={"chat_id": 5, "text": text}, timeout=5).status_code


def test_fail_at_random_fails_a_share_of_one_method_before_it_takes_effect() -> None:
    with FakeTelegramApi() as fake:
        # Given sendMessage failing half the time, from a fixed seed
        fake.fail_at_random(0.5, status=500, seed=7)
        # When forty messages are sent, and another method is called
        statuses = [_send(fake, f"m{i}") for i in range(40)]
        me = httpx2.post(f"{fake.base_url}/bot{fake.token}/getMe", timeout=5).status_code
        # Then some failed and some went out, only the ones that went out were posted,
        # and other methods were not touched
        assert 0 < statuses.count(500) < 40
        assert len(fake.messages) == statuses.count(200)
        assert me == 200
        # And after recover() nothing fails
        fake.recover()
        assert {_send(fake, f"after{i}") for i in range(10)} == {200}
