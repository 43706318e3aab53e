"""`bench/concurrency.py`: a small run answers every chat and writes its figures in the agreed
shape; the plot is a self-contained SVG file whose points carry their values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench.concurrency import cpu_floor
from bench.concurrency_plot import Guide, Series, concurrency_svg
from bench.fleet_up import fleet_rss_by_process
from bench.machine_busy import MachineBusy

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"
SIZE_FIELDS = {
    "chats", "answered", "failures", "last_answer_s", "latency_p50_s", "latency_p95_s",
    "floor_s", "ratio", "rss_idle_mb", "rss_peak_mb", "pss_idle_mb", "rss_idle_by_process",
    "model_requests", "load_before", "load_after", "cpu_ms_per_turn",
    "cpu_ms_per_turn_by_process", "rss_peak_by_process", "bot_api_calls_per_turn",
    "bot_api_connections_per_turn", "last_call_s", "redis_commands_per_turn",
    "driver_cpu_ms_per_turn", "busy_until_last_call", "busy_answering",
    "machine_cpu_ms_per_turn", "cpu_floor_s",
}  # fmt: skip


def test_the_cpu_floor_is_the_later_of_all_the_cpu_spread_and_the_calls_cpu_then_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given two cores
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    # When every call was made before the model's 3 s: its CPU on both cores, then the model
    assert cpu_floor(3.0, 1.5, cpu_before_s=2.0, cpu_s=4.0) == 4.0
    # And a wave whose CPU alone outlasts that is bounded by all its CPU spread
    assert cpu_floor(3.0, 1.5, cpu_before_s=0.5, cpu_s=9.0) == 4.5
    # And when calls were still being made as the first answers came, only the spread counts
    assert cpu_floor(3.0, 8.0, cpu_before_s=14.0, cpu_s=20.0) == 10.0


def test_machine_busy_counts_a_busy_loop_on_one_core() -> None:
    # Given the machine sampled while this process spins for half a second
    with MachineBusy(every=0.02) as machine:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.5:
            pass
        t1 = time.monotonic()
    cores = os.cpu_count() or 1
    # Then at least most of one core's time was busy then (other processes may add theirs)
    assert machine.cpu_s(t0, t1) >= 0.35, machine.cpu_s(t0, t1)
    assert 0.7 / cores <= machine.busy(t0, t1) <= 1.0, machine.busy(t0, t1)
    # And a stretch shorter than a sample's interval still has ticks to share
    assert 0.0 <= machine.busy(t0 + 0.2, t0 + 0.201) <= 1.0, machine.busy(t0 + 0.2, t0 + 0.201)


def test_concurrency_svg_is_one_standalone_document_with_a_titled_point_per_value() -> None:
    # Given three sizes, two time series and one RSS series
    svg = concurrency_svg(
        [16, 64, 200],
        [Series("last answer", "red", [3.5, 14.3, 42.7]), Series("p95", "blue", [3.4, 13, 40])],
        [Guide("model 3 s (floor)", 3.0)],
        Series("peak RSS", "green", [900.0, 950.0, 1010.0]),
        [Guide("aim 600 MB", 600)],
        "caption <with> markup",
    )
    # When it is parsed as XML
    root = ET.fromstring(svg)
    # Then it is an SVG root in the SVG namespace, with one titled circle per value
    assert root.tag == f"{SVG}svg", root.tag
    titles = [c.findtext(f"{SVG}title") for c in root.iter(f"{SVG}circle")]
    assert len(titles) == 9, titles
    assert "last answer, 200 chats: 42.7" in titles, titles
    assert "peak RSS, 16 chats: 900.0" in titles, titles
    assert "caption <with> markup" in "".join(root.itertext()), "the caption is escaped text"


def test_fleet_rss_by_process_counts_a_process_and_its_children() -> None:
    # Given this process with one child of its own
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        # When the RSS of this process's tree is read
        found = fleet_rss_by_process(os.getpid())
    finally:
        child.kill()
        child.wait()
    # Then both are there, each with some memory
    pids = {int(name.split()[0]) for name in found}
    assert {os.getpid(), child.pid} <= pids, found
    assert all(mb > 0 for mb in found.values()), found


@pytest.mark.integration
@pytest.mark.bench
@pytest.mark.timeout(600)
def test_a_small_run_answers_every_chat_and_writes_json_and_svg(tmp_path: Path) -> None:
    # Given a run of 4 Telegram chats at once against a model that answers after 0.2 s, with
    # one setting passed through to the fleet and a second worker host
    out, svg = tmp_path / "conc.json", tmp_path / "conc.svg"
    done = subprocess.run(
        [sys.executable, "-m", "bench.concurrency", "--sizes", "4", "--delay", "0.2",
         "--env", "WORKER_CONCURRENCY=2", "--workers", "2", "--json", str(out), "--svg",
         str(svg)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # Then the figures have the agreed shape and every chat was answered
    figures = json.loads(out.read_text())
    assert figures["model_delay_s"] == 0.2 and figures["via"] == "telegram"
    assert figures["env"] == {"WORKER_CONCURRENCY": "2"} and figures["workers"] == 2
    [size] = figures["sizes"]
    assert set(size) == SIZE_FIELDS, sorted(set(size) ^ SIZE_FIELDS)
    assert (size["chats"], size["answered"], size["failures"]) == (4, 4, {}), size
    assert size["model_requests"] >= 4, "expected one model call per chat at least"
    assert 0 < size["last_call_s"] < size["last_answer_s"], "the last call comes before its answer"
    # And the Bot API's calls are counted per turn: each chat's answer is one sendMessage
    assert size["bot_api_calls_per_turn"]["sendMessage"] >= 1, size["bot_api_calls_per_turn"]
    assert size["bot_api_connections_per_turn"] >= 0, size
    assert size["floor_s"] > 0 and size["rss_peak_mb"] > 0 and size["rss_idle_mb"] > 0, size
    workers = [name for name in size["rss_idle_by_process"] if name.endswith("cli worker")]
    assert len(workers) == 2, f"expected the worker of each of two hosts, got {workers}"
    # And the peak's sample is kept by process, adding up to the peak
    peak_parts = size["rss_peak_by_process"]
    assert any(name.endswith("cli worker") for name in peak_parts), peak_parts
    assert abs(sum(peak_parts.values()) - size["rss_peak_mb"]) < 1.0, size
    # And the fleet's CPU per turn is counted, by process
    assert size["cpu_ms_per_turn"] > 0, size
    assert any("worker" in name for name in size["cpu_ms_per_turn_by_process"]), size
    # And Redis's commands and the driver's own CPU are counted per turn
    commands = size["redis_commands_per_turn"]
    assert commands["all"] >= commands["evalsha"] > 0, commands
    assert size["driver_cpu_ms_per_turn"] > 0, size
    # And the whole machine's CPU is counted, with a floor no later than the last answer
    assert 0 < size["busy_until_last_call"] <= 1 and 0 <= size["busy_answering"] <= 1, size
    assert size["machine_cpu_ms_per_turn"] > 0, size
    assert 0 < size["cpu_floor_s"] <= size["last_answer_s"], size
    # And the plot is an SVG document
    assert ET.parse(svg).getroot().tag == f"{SVG}svg"
