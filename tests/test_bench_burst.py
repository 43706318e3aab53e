"""`bench/burst.py`'s new-connection bursts: how their requests are laid out, and how the
webhooks' p99 is set against `/healthz`'s."""

from __future__ import annotations

from bench.burst import _fresh_requests, fresh_ratios, round_ratios


def test_a_mixed_burst_alternates_webhooks_and_healthz_each_on_its_own_connection() -> None:
    # When a mixed burst of four is built
    requests = _fresh_requests("mixed", first_id=1, count=4)

    # Then webhooks and /healthz alternate, and every request asks to close its connection
    assert [kind for kind, _ in requests] == ["webhook", "healthz", "webhook", "healthz"]
    assert all(b"Connection: close\r\n\r\n" in raw for _, raw in requests)
    assert requests[0][1].startswith(b"POST /webhooks/telegram ")
    assert requests[1][1].startswith(b"GET /healthz ")


def test_ratios_set_each_webhook_burst_against_the_healthz_burst_of_its_round() -> None:
    # Given two rounds of two requests each: webhooks twice as slow in the first, equal after
    out = {
        "fresh_webhook_webhook": [0.1, 0.2, 0.1, 0.1],
        "fresh_healthz_healthz": [0.1, 0.1, 0.1, 0.1],
        "fresh_mixed_webhook": [0.3, 0.3],
        "fresh_mixed_healthz": [0.2, 0.3],
    }

    # When the ratios are taken
    by_round = round_ratios(out, concurrency=2)
    separate, mixed = fresh_ratios(out)

    # Then each round has its own, and the whole run's p99s give the others
    assert by_round == [2.0, 1.0]
    assert separate == 2.0
    assert mixed == 1.0
