"""When `harness up` says its fleet can take messages: once its own web process answers
`/readyz` with 200.

Each start gives its processes a random fleet id (`FLEET_ID_ENV`), which `/readyz` echoes in
`FLEET_ID_HEADER` (`harness.web.health`), so a web server of another fleet on the same port
does not count. Standard library only, and no `urllib` (it loads `ssl` and `email`, about
10 MB): the supervisor that asks holds this for the fleet's whole life.
"""

from __future__ import annotations

import socket

FLEET_ID_ENV = "HARNESS_FLEET_ID"
"""Set by `harness up` for its processes: a random id per start."""
FLEET_ID_HEADER = "X-Harness-Fleet"
"""The header in which `/readyz` echoes `FLEET_ID_ENV`, so `harness up` can tell its own web
process from another fleet's on the same port."""

_TIMEOUT_S = 2.0
_MAX_HEAD = 64 * 1024  # `/readyz`'s status line and headers fit many times over


def answers_ready(port: int, fleet_id: str) -> bool:
    """True when `GET /readyz` on 127.0.0.1:`port` answers 200 with `fleet_id` in
    `FLEET_ID_HEADER`. False when nothing answers in time, or anything else does. Never
    raises."""
    request = f"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT_S) as sock:
            sock.sendall(request.encode("ascii"))
            head = _read_head(sock)
    except OSError:
        return False
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split()
    if len(status) < 2 or status[1] != "200":
        return False
    headers = (line.partition(":") for line in lines[1:])
    ours = {name.strip().lower(): value.strip() for name, _, value in headers}
    return ours.get(FLEET_ID_HEADER.lower()) == fleet_id


def _read_head(sock: socket.socket) -> bytes:
    """The response's status line and headers (up to the blank line), or what came before the
    connection closed."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < _MAX_HEAD:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\r\n\r\n")[0]


def ready_line(port: int | None, *, api_key: bool) -> str:
    """The line saying the fleet can take messages: `harness chat` always; `POST /api/chat`
    only with an `api_key` (HARNESS_API_KEY), since without one it answers 503, so then how
    to turn it on."""
    if api_key:
        return f"ready: chat with `harness chat`, or POST /api/chat on port {port}"
    return (
        f"ready: chat with `harness chat` (POST /api/chat on port {port} needs "
        "HARNESS_API_KEY in .env, then a restart)"
    )
