"""`bench/turn_floor.py`: a tiny run measures every required part's CPU and writes the floor
of a turn and the bounds it implies; the bound is the model's time or the turns' CPU spread
over the cores, whichever is longer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.floor_apps import tasks
from bench.turn_floor import bound_s, bounds
from harness.runtime.celery_app import app as harness_celery

ROOT = Path(__file__).resolve().parents[1]
PARTS = {
    "webhook", "redis for the webhook", "task round: worker", "task round: sender",
    "redis for the task round", "model call", "sendMessage",
}  # fmt: skip


def test_the_floor_celery_app_has_harness_celery_settings_but_celery_own_pool() -> None:
    # Given the settings Harness gives its Celery app (its pool is its own, not Celery's)
    names = (
        "task_serializer", "accept_content", "task_ignore_result", "task_acks_late",
        "worker_prefetch_multiplier", "worker_disable_prefetch", "task_default_queue",
        "worker_cancel_long_running_tasks_on_connection_loss",
    )  # fmt: skip
    # When the floor's bare app is read
    ours = {name: tasks.conf[name] for name in names}
    theirs = {name: harness_celery.conf[name] for name in names}
    # Then it sends and takes tasks as Harness does, but on a queue of its own
    assert ours.pop("task_default_queue") != theirs.pop("task_default_queue")
    assert ours == theirs, "the floor's Celery settings drifted from Harness's"


def test_the_bound_is_the_model_time_until_the_cpu_of_the_turns_exceeds_it() -> None:
    # Given 2 cores and a 3 s model
    # When 200 turns cost 10 ms each (1 s of the cores) and 1,000 turns 20 ms each (10 s)
    light, heavy = bound_s(200, 10.0, 2, 3.0), bound_s(1000, 20.0, 2, 3.0)
    # Then the light wave is bound by the model and the heavy one by the CPU
    assert light == 3.0, light
    assert heavy == pytest.approx(10.0), heavy


def test_the_budget_of_an_aim_is_the_cpu_a_turn_may_cost_to_meet_it_exactly() -> None:
    # Given the floor and Harness each costing exactly the budget of the 200 chats' aim, 30 ms
    # of Harness's in its worker process
    harness = {"cpu_ms_per_turn": 45.0, "cpu_ms_per_turn_by_process": {"7 cli worker": 30.0}}
    [at_200, at_1000] = bounds(45.0, harness, cores=2, model_s=3.0)
    # Then 200 chats are bound at the aim (1.5x) and the budget is 45 ms a turn
    assert at_200["budget_ms_per_turn"] == 45.0, at_200
    assert at_200["floor_ratio"] == at_200["harness_ratio"] == 1.5, at_200
    # But not with one worker process: its 30 ms a turn run on one core, 6 s for 200 turns
    assert at_200["harness_one_worker_bound_s"] == 6.0, at_200
    # And 1,000 chats may cost 12 ms a turn; at 45 ms they take 22.5 s, 7.5x the model
    assert at_1000["budget_ms_per_turn"] == 12.0, at_1000
    assert at_1000["floor_bound_s"] == 22.5 and at_1000["floor_ratio"] == 7.5, at_1000


@pytest.mark.integration
@pytest.mark.bench
@pytest.mark.timeout(300)
def test_a_tiny_run_measures_every_part_and_writes_the_floor(tmp_path: Path) -> None:
    # Given a tiny run without Harness's own wave
    out = tmp_path / "floor.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.turn_floor", "--requests", "40", "--tasks", "40",
         "--calls", "20", "--concurrency", "10", "--send-at-once", "5", "--no-harness",
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # Then every part has a positive CPU per unit, counted over the units asked for
    figures = json.loads(out.read_text())
    parts = {part["name"]: part for part in figures["parts"]}
    assert set(parts) == PARTS, sorted(set(parts) ^ PARTS)
    assert all(part["ms"] > 0 and part["units"] > 0 for part in parts.values()), parts
    assert parts["task round: worker"]["per_turn"] == figures["tasks_per_turn"] == 3
    # And the floor of a turn is their sum, each part as many times as a turn uses it
    total = sum(part["ms"] * part["per_turn"] for part in parts.values())
    assert figures["floor_ms_per_turn"] == pytest.approx(total, abs=0.001), figures
    # And the bounds are given for both aims, none shorter than the model's time
    assert [row["chats"] for row in figures["bounds"]] == [200, 1000], figures["bounds"]
    assert all(row["floor_ratio"] >= 1 for row in figures["bounds"]), figures["bounds"]
    assert figures["harness"] is None and "floor of a turn" in done.stdout, done.stdout
