"""httpx2 is the process's one HTTP stack: MCP's request lines are dropped, no one else's."""

from __future__ import annotations

import logging
import threading

import httpx2
import pytest

from harness.mcp.connection import THREAD_PREFIX


def _request(url: str) -> None:
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200))
    with httpx2.Client(transport=transport) as client:
        client.get(url)


def _request_on_thread(name: str, url: str) -> None:
    thread = threading.Thread(target=_request, args=(url,), name=name)
    thread.start()
    thread.join()


def test_mcp_request_lines_are_dropped_and_other_request_lines_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given the MCP connection module loaded in the same process as a channel's client
    caplog.set_level(logging.DEBUG)

    # When an MCP connection's thread and another thread each make a request
    _request_on_thread(f"{THREAD_PREFIX}search", "https://mcp.example/mcp?key=SECRET")
    _request_on_thread("channel-sender", "https://api.example/send")

    # Then only the other thread's request line reaches the log
    lines = [r.getMessage() for r in caplog.records if r.name == "httpx2"]
    assert not any("mcp.example" in line for line in lines), lines
    assert any("api.example/send" in line for line in lines), lines
