"""The worker's thread pool wakes the consumer's event loop each time a task ends, after
Celery has released the task's slot, so a freed thread reads the next kick at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from celery import concurrency
from kombu.asynchronous import Hub, get_event_loop, set_event_loop

from harness.runtime.celery_app import app
from harness.runtime.worker_pool import POOL, TaskPool


class RecordingHub(Hub):
    """kombu's event loop, noting each wake-up asked of it from another thread."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events
        self.woken = threading.Event()

    def call_soon(self, callback: Any, *args: Any) -> Any:
        self.events.append("woken")
        self.woken.set()
        return super().call_soon(callback, *args)


@pytest.fixture
def events() -> list[str]:
    return []


@pytest.fixture
def hub(events: list[str]) -> Iterator[RecordingHub]:
    before = get_event_loop()
    loop = RecordingHub(events)
    set_event_loop(loop)
    yield loop
    set_event_loop(before)
    loop.close()


@pytest.fixture
def pool() -> Iterator[TaskPool]:
    tasks = TaskPool(limit=1)
    tasks.start()
    yield tasks
    tasks.stop()


def test_a_finished_task_wakes_the_consumer_after_its_slot_is_released(
    hub: RecordingHub, pool: TaskPool, events: list[str]
) -> None:
    # Given the worker's event loop sleeping in its poll, and a task on the pool
    def task() -> str:
        events.append("ran")
        return "done"

    def released(result: Any) -> None:  # Celery's callback: the request is done, slot free
        events.append(f"released {result}")

    # When the task ends
    pool.apply_async(task, callback=released)
    assert hub.woken.wait(10), "the pool never woke the consumer"
    # Then the loop was woken once, after Celery released the task's slot
    assert events == ["ran", "released done", "woken"]


def test_a_task_that_raises_still_wakes_the_consumer(
    hub: RecordingHub, pool: TaskPool, events: list[str]
) -> None:
    def task() -> None:
        raise RuntimeError("boom")

    pool.apply_async(task)
    assert hub.woken.wait(10), "a failing task left the consumer asleep"
    assert events == ["woken"]


def test_without_an_event_loop_a_task_ends_quietly(pool: TaskPool) -> None:
    # A pool used outside a worker (no consumer loop) runs its tasks as Celery's does
    before = get_event_loop()
    set_event_loop(None)
    try:
        values: list[int] = []
        result = pool.apply_async(lambda: 7, callback=values.append)
        result.wait(10)
        assert result.f.exception() is None
        assert values == [7]
    finally:
        set_event_loop(before)


def test_the_celery_app_runs_its_workers_on_this_pool() -> None:
    assert app.conf.worker_pool == POOL
    assert concurrency.get_implementation(app.conf.worker_pool) is TaskPool
