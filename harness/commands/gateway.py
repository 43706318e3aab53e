"""`harness gateway`: this host's model gateway in a process of its own (`MODEL_CALLS=gateway`).

`harness up` runs it beside a worker started with `--no-gateway --queues harness`, so the
calls' streams and the model SDKs live in this interpreter and the worker's is left to the
runs (`harness.composition.run_model_gateway`). With `--deliver` (what `harness up` runs) it
also posts the replies: it is then a worker of the delivery queue alone
(`harness.runtime.functions.DELIVERY_QUEUE`) with the gateway on a thread, so a reply's
platform calls, too, take nothing from the turns' worker."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.fleet.liveness import liveness_for
from harness.observe.json_logs import configure_logging
from harness.runtime.banner import hold_start_up_lines
from harness.settings import Settings, get_settings


def gateway(
    deliver: Annotated[
        bool,
        typer.Option(
            "--deliver",
            help="Also post the replies (the harness-delivery queue), as a worker of that queue "
            "with the gateway on a thread (what `harness up` runs).",
        ),
    ] = False,
) -> None:
    """Make the model calls that runs park on (MODEL_CALLS=gateway), in a process of its own,
    until Ctrl-C; run workers beside it with `--no-gateway`."""
    from harness.composition import require_offloaded_calls, run_model_gateway

    settings = get_settings()
    require_offloaded_calls(settings)  # before logging is set up: one line, nothing else
    configure_logging(settings.log_level, settings.log_format)
    hold_start_up_lines()  # under a quiet `harness up`: one line once it serves
    keeper = liveness_for(settings, "gateway")  # `harness health --process gateway`
    keeper.start()
    try:
        if deliver:
            _deliver(settings)
        else:
            run_model_gateway(settings)  # its errors are reported by `one_line_errors`
    finally:
        keeper.stop()


def _deliver(settings: Settings) -> None:
    """A worker of the delivery queue alone, its model gateway on a thread (the process is
    alive only while that thread runs: `start_model_gateway`). Blocks."""
    from harness.composition import run_worker
    from harness.fleet_functions import function_modules
    from harness.runtime.functions import DELIVERY_QUEUE

    modules = function_modules(settings)
    run_worker(settings, modules, settings.worker_concurrency, [DELIVERY_QUEUE], gateway=True)
