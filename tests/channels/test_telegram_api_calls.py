"""What a Bot API call costs beyond its request: connections kept for a burst from many
threads (`POOL_CONNECTIONS`), and no log line per call below DEBUG."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from channels.telegram.api import TelegramApi
from tests.fakes.telegram_api import FakeTelegramApi

THREADS = 48
"""More threads than httpx2 keeps idle connections by default (20)."""


@pytest.fixture
def kept_alive() -> Iterator[FakeTelegramApi]:
    """A fake Bot API that keeps connections open between calls, like api.telegram.org."""
    with FakeTelegramApi(keep_alive=True) as fake:
        yield fake


def burst(api: TelegramApi, threads: int, calls: int) -> None:
    """`threads` threads released together, each showing typing `calls` times."""
    start = threading.Barrier(threads)
    failures: list[BaseException] = []

    def work() -> None:
        start.wait()
        try:
            for _ in range(calls):
                api.send_chat_action("1111111", "typing")
        except BaseException as exc:
            failures.append(exc)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert not failures, f"every call must succeed, got {failures[:3]}"


def test_telegram_api_a_second_burst_from_many_threads_opens_no_connection(
    kept_alive: FakeTelegramApi,
) -> None:
    api = TelegramApi(kept_alive.token, kept_alive.base_url)
    try:
        # Given a burst of calls from many threads at once, which opened what it needed
        burst(api, THREADS, 5)
        opened = kept_alive.connections
        # When the same threads call again
        burst(api, THREADS, 5)
        # Then the calls went over kept connections: never more than one per thread in all
        # (the second burst may find more threads in flight at once than the first did, and
        # open the few more it needs; a pool that closed what it could not keep idle opened
        # a connection for most calls)
        assert kept_alive.connections <= THREADS, (
            f"{kept_alive.connections} connections for {THREADS} threads "
            f"({opened} after the first burst)"
        )
    finally:
        api.close()


def test_telegram_api_request_lines_are_logged_only_at_debug(
    kept_alive: FakeTelegramApi, caplog: pytest.LogCaptureFixture
) -> None:
    api = TelegramApi(kept_alive.token, kept_alive.base_url)
    try:
        # Given the log at INFO, then at DEBUG
        caplog.set_level(logging.INFO)
        api.send_chat_action("1111111", "typing")
        at_info = [r.getMessage() for r in caplog.records if "HTTP Request" in r.getMessage()]
        caplog.set_level(logging.DEBUG)
        api.send_chat_action("1111111", "typing")
        at_debug = [r.getMessage() for r in caplog.records if "HTTP Request" in r.getMessage()]
    finally:
        api.close()
    # Then httpx2's line per call shows only at DEBUG, with the token redacted
    assert at_info == [], f"no request line expected at INFO, got {at_info}"
    assert len(at_debug) == 1 and "/bot<token>/sendChatAction" in at_debug[0], at_debug


def test_telegram_api_other_request_lines_with_bot_in_the_url_are_still_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given the log at INFO and a request line of another client whose URL has "/bot" in it
    caplog.set_level(logging.INFO)
    url = "https://example.com/bottles/list"
    # When httpx2 logs it
    logging.getLogger("httpx2").info(
        'HTTP Request: %s %s "%s %d %s"', "GET", url, "HTTP/1.1", 200, "OK"
    )
    # Then it is kept (redacted as a token-like path may be): only the Bot API's lines go
    kept = [r.getMessage() for r in caplog.records if "example.com" in r.getMessage()]
    assert len(kept) == 1, "a request line that is not the Bot API's must stay in the log"
