"""A probe of where a fleet worker's CPU goes, loaded by Python at start-up (`sitecustomize`)
when this folder is on `PYTHONPATH` (`python -m bench.worker_cpu` puts it there).

In a process started as `... harness.cli worker ...` with `WORKER_CPU_PROBE=<file>` set, a
thread waits `WORKER_CPU_START` seconds, then wraps the functions of `TARGETS` so that each
call adds its thread's CPU time (`time.thread_time`, so other threads' work and waits are not
counted) under a label, lets `WORKER_CPU_SECONDS` pass, and writes to `<file>` as JSON: per
label the milliseconds and the calls, and per thread name the CPU its threads spent in the
window (from `/proc/self/task`). Nothing happens in any other process, or without the
variable. Nested labels overlap (a step's total includes its record), as a profile's
inclusive times do.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

TARGETS: tuple[tuple[str, str, str], ...] = (
    # (module, attribute path, label); `{arg2}` in a label is the call's third argument,
    # `{fn}` the id of its first (a function)
    ("harness.runtime.celery_app", "advance", "a kick's run (advance)"),
    ("harness.runtime.functions", "Function.__call__", "an execution of {fn}"),
    ("harness.runtime.run_step", "RunSteps._run_once", "step {arg2} (with its record)"),
    ("harness.runtime.run_step", "RunSteps._record", "a step's record"),
    ("harness.runtime.ledger", "Ledger.claim", "ledger claim"),
    ("harness.runtime.ledger", "Ledger.finish", "ledger finish"),
    ("harness.runtime.steps", "Step.offload", "offload (park a model call)"),
    ("harness.runtime.steps", "Step.send_event", "send_event"),
    ("harness.agent.turn", "DurableTurn.save_user_message", "turn: save the message"),
    ("harness.agent.turn", "DurableTurn.load_history", "turn: load history"),
    ("harness.agent.turn", "DurableTurn.system", "turn: system prompt"),
    ("harness.agent.model_calls", "ModelCallRequest.model_validate_json", "gateway: parse request"),
    ("harness.agent.model_calls", "CallHead.model_validate_json", "gateway: read the call's head"),
    # the worker's `prepare` since the gateway sends what it rendered; the gateway's before
    ("harness.llm.anthropic", "AnthropicProvider._body", "render the body"),
    ("harness.agent.gateway_texts", "open_live", "gateway: open the draft"),
    ("harness.agent.live_text", "LiveText.on_text", "live text: a streamed piece"),
    ("harness.agent.progress", "publish", "live text: publish progress"),
    ("channels.draft_writer", "DraftWriter.close", "draft writer: close"),
    ("harness.agent.gateway", "outcome_of", "gateway: the outcome"),
    ("channels.telegram.api", "TelegramApi._post", "telegram {arg1}"),
)


def _thread_cpu() -> dict[int, float]:
    """CPU seconds of each thread of this process, by native id."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


class _Probe:
    def __init__(self) -> None:
        self.spent: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        self._lock = threading.Lock()

    def wrap(self, module: str, path: str, label: str) -> None:
        owner: Any = importlib.import_module(module)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        original: Callable[..., Any] = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            outer = getattr(_phase, "name", "")
            if path == "Function.__call__":  # a replay when its journal holds steps already
                state = getattr(getattr(args[1], "step", None), "_s", None)
                journal = getattr(state, "journal", {})
                _phase.name = " (replay)" if journal else " (first)"
            try:
                return original(*args, **kwargs)
            finally:
                phase = getattr(_phase, "name", "")
                _phase.name = outer
                fn = getattr(args[0], "id", "?") if args else "?"
                shown = label.format(arg1=_arg(args, 1), arg2=_arg(args, 2), fn=fn) + phase
                with self._lock:
                    entry = self.spent[shown]
                    entry[0] += time.thread_time() - started
                    entry[1] += 1

        setattr(owner, name, timed)

    def run(self, out: str, start: float, seconds: float) -> None:
        time.sleep(start)
        for module, path, label in TARGETS:
            try:
                self.wrap(module, path, label)
            except (ImportError, AttributeError) as exc:  # code moved: say so, go on
                self.spent[f"(not probed: {module}.{path}: {exc})"] = [0.0, 0.0]
        before = _thread_cpu()
        time.sleep(seconds)
        after = _thread_cpu()
        names = {t.native_id: t.name for t in threading.enumerate()}
        threads: dict[str, float] = defaultdict(float)
        for tid, spent in after.items():
            name = re.sub(r"[-_ ]?\d+$", "", names.get(tid, "?"))
            threads[name] += spent - before.get(tid, 0.0)
        with self._lock:
            calls = {
                k: {"ms": round(v[0] * 1000, 1), "calls": int(v[1])} for k, v in self.spent.items()
            }
        with open(out, "w") as sink:
            json.dump({"seconds": seconds, "calls": calls, "threads_ms": {
                k: round(v * 1000) for k, v in threads.items()}}, sink, indent=1)  # fmt: skip


_phase = threading.local()
"""Per thread: " (first)" or " (replay)" while an execution runs (whether its run's journal
held steps when it began), added to the label of every call made in it."""


def _arg(args: tuple[Any, ...], index: int) -> str:
    return str(args[index]) if len(args) > index else "?"


if os.environ.get("WORKER_CPU_PROBE") and "worker" in sys.argv:
    threading.Thread(
        target=_Probe().run,
        args=(
            os.environ["WORKER_CPU_PROBE"],
            float(os.environ.get("WORKER_CPU_START", "4")),
            float(os.environ.get("WORKER_CPU_SECONDS", "16")),
        ),
        name="worker-cpu-probe",
        daemon=True,
    ).start()
