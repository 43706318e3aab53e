"""`harness health --process NAME`: the exec liveness probe of a worker, scheduler or sidecar
(`harness.fleet.liveness`). Exits 0 when the process's liveness file is fresh, 1 otherwise.
Reads one file's time: no Redis, no network, quick enough for a probe every few seconds."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.commands.exit_codes import FAILED
from harness.commands.output import JsonOption, emit_json
from harness.fleet.liveness import PROCESSES, health_file, is_alive
from harness.settings import get_settings


def health(
    process: Annotated[
        str,
        typer.Option(
            "--process",
            help=f"Which process to check: {', '.join(PROCESSES)} (the web server: GET /livez).",
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Exit 0 when this host's PROCESS is alive (its liveness file was touched within
    HEALTH_MAX_AGE), 1 when not: an exec probe for Kubernetes or compose. `--json`:
    `{"process", "alive", "file", "max_age_s"}` (the exit code is the same)."""
    if process not in PROCESSES:
        raise typer.BadParameter(f"one of {', '.join(PROCESSES)}", param_hint="--process")
    settings = get_settings()
    path = health_file(settings, process)
    alive = is_alive(path, settings.health_max_age)
    if as_json:
        emit_json({"process": process, "alive": alive, "file": str(path),
                   "max_age_s": settings.health_max_age})  # fmt: skip
        if not alive:
            raise typer.Exit(code=FAILED)
        return
    if alive:
        typer.echo(f"{process}: alive")
        return
    typer.echo(f"{process}: not alive ({path} missing or older than "
               f"{settings.health_max_age:.0f}s)", err=True)  # fmt: skip
    raise typer.Exit(code=FAILED)
