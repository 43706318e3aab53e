"""Stopping the process groups that tests and benchmarks start (`start_new_session=True`)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable
from typing import Any


def stop_groups(procs: Iterable[subprocess.Popen[Any]], timeout: float) -> None:
    """SIGTERM the process group of each process still running, then wait up to `timeout`
    seconds for each; a group still running after that gets SIGKILL. Every process has ended
    when this returns."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def interrupt(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Ctrl-C `proc` (SIGINT, as to `harness up` in a terminal) when it still runs, then wait
    up to `timeout` seconds; a process still running after that has its group killed. It has
    ended when this returns."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
