"""`harness gateway`: this host's model gateway in a process of its own (`MODEL_CALLS=gateway`).

`harness up` runs it beside a worker started with `--no-gateway`, so the calls' streams and the
model SDKs live in this interpreter and the worker's is left to the runs
(`harness.composition.run_model_gateway`)."""

from __future__ import annotations

from harness.fleet.liveness import liveness_for
from harness.observe.json_logs import configure_logging
from harness.runtime.banner import hold_start_up_lines
from harness.settings import get_settings


def gateway() -> None:
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
        run_model_gateway(settings)  # its errors are reported by `one_line_errors`
    finally:
        keeper.stop()
