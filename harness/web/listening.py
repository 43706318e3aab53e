"""The uvicorn server `harness web` runs: uvicorn's own, saying in one line when it listens.

uvicorn logs four lines while it starts (its process, the lifespan, "running on"); under a
quiet `harness up` those are held back (`harness.runtime.banner`) and this one line, said
once the sockets are bound, is the web process's whole start-up."""

from __future__ import annotations

import logging
import socket

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from harness.runtime.banner import say_up

log = logging.getLogger("harness.web")


class ListeningServer(uvicorn.Server):
    """`uvicorn.Server` that says `web listening on HOST:PORT` (`say_up`) once it listens."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up (lifespan, then bind), then the one line when it started."""
        await super().startup(sockets)
        if self.started:
            say_up(log, "web listening on %s:%d", self.config.host, self.config.port)


def run_server(config: uvicorn.Config, sockets: list[socket.socket] | None = None) -> None:
    """Serve `config` (on `sockets`, when given) until signalled, as `uvicorn.run` does: a
    Ctrl-C ends it quietly; a start that failed exits with uvicorn's start-up failure code
    (3). Blocks."""
    server = ListeningServer(config)
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:  # uvicorn re-raises the signal it caught, once it has stopped
        pass
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)
