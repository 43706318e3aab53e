"""Run filters read the run indexes (by function, session and status), so an old matching run
is found however many newer runs there are, and status indexes follow status changes."""

from __future__ import annotations

from harness.observe.run_filters import RunFilter, find_runs
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.scheduler import trim_history
from harness.runtime.testing import drain
from harness.web.dashboard.views import run_page
from tests.runtime_fixtures import ManualClock

SCAN = 10  # far fewer than the newer runs, so only an index can reach the old one


def _old_failed_run_then_newer_ones(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock, newer: int
) -> str:
    @function(id="old-fn", trigger=event("app/old"), retries=0, registry=registry)
    def old(ctx: Context) -> None:
        ctx.step.run("boom", lambda: 1 / 0)

    @function(id="busy-fn", trigger=event("app/busy"), retries=0, registry=registry)
    def busy(ctx: Context) -> int:
        return 1

    runtime.register_functions()
    data = {"session_key": "chat-old"}
    old_id = publish({"name": "app/old", "data": data}, runtime=runtime).run_ids[0]
    drain(runtime)
    for n in range(newer):
        clock.advance(1)
        publish({"name": "app/busy", "data": {"session_key": f"chat-{n}"}}, runtime=runtime)
    drain(runtime)
    return old_id


def test_filters_find_an_old_matching_run_beyond_the_scan_limit(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given an old failed run, then more newer runs than one listing reads
    old_id = _old_failed_run_then_newer_ones(runtime, registry, clock, newer=3 * SCAN)
    assert old_id not in [r.id for r in runtime.ledger.recent(SCAN)], "the old run is too new"
    # When runs are filtered by its function, its session, its status, or all three
    filters = [
        RunFilter(function="old-fn"),
        RunFilter(session="chat-old"),
        RunFilter(status="failed"),
        RunFilter(function="old-fn", session="chat-old", status="failed"),
    ]
    # Then each filter finds it, and only it
    for wanted in filters:
        found = [r.id for r in find_runs(runtime, wanted, limit=5, scan=SCAN)]
        assert found == [old_id], (wanted, found)


def test_filters_list_newest_first_and_respect_since(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given an old run and 12 newer runs of another function, one second apart
    _old_failed_run_then_newer_ones(runtime, registry, clock, newer=12)
    # When the newer function's runs are listed, and those of the last 5 seconds
    listed = find_runs(runtime, RunFilter(function="busy-fn"), limit=20, scan=SCAN)
    recent = find_runs(
        runtime, RunFilter(function="busy-fn", since_ms=runtime.now_ms() - 4_500), limit=20
    )
    # Then they come newest first, bounded by the scan, and `since` keeps the last five
    created = [r.created_at for r in listed]
    assert created == sorted(created, reverse=True) and len(listed) == SCAN, created
    assert len(recent) == 5, [r.created_at for r in recent]


def test_status_index_follows_a_run_through_its_statuses(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run that sleeps between two steps
    @function(id="napper", trigger=event("app/nap"), retries=0, registry=registry)
    def napper(ctx: Context) -> str:
        ctx.step.run("before", lambda: 1)
        ctx.step.sleep("nap", "10s")
        return "woke"

    runtime.register_functions()
    run_id = publish({"name": "app/nap"}, runtime=runtime).run_ids[0]

    def statuses() -> list[str]:
        return [
            status
            for status in ("queued", "running", "sleeping", "completed")
            if run_id in runtime.run_index.newest(runtime.keys.runs_in_status(status), 0, 0, 10)
        ]

    # Then it is indexed as queued, then sleeping, then completed: in one status at a time
    assert statuses() == ["queued"]
    drain(runtime)
    assert statuses() == ["sleeping"]
    assert [r.id for r in find_runs(runtime, RunFilter(status="sleeping"))] == [run_id]
    clock.advance(11)
    drain(runtime)
    assert statuses() == ["completed"]
    assert find_runs(runtime, RunFilter(status="sleeping")) == []


def test_trim_builds_indexes_for_older_runs_and_forgets_expired_ones(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given runs recorded before the indexes existed (their index entries are gone)
    old_id = _old_failed_run_then_newer_ones(runtime, registry, clock, newer=3)
    for key in runtime.redis.scan_iter(f"{runtime.keys.prefix}:runs:*"):
        runtime.redis.delete(key)
    assert find_runs(runtime, RunFilter(function="old-fn")) == []
    # When the scheduler trims history
    trim_history(runtime)
    # Then the old run is found by its function and status again
    assert [r.id for r in find_runs(runtime, RunFilter(function="old-fn"))] == [old_id]
    assert [r.id for r in find_runs(runtime, RunFilter(status="failed"))] == [old_id]
    # When the retention period passes and history is trimmed again
    clock.advance(runtime.retention_s + 60)
    trim_history(runtime)
    # Then no index holds any run, and no index name is left behind
    assert runtime.run_index.sizes([runtime.keys.runs_of_function("old-fn")]) == [0]
    assert runtime.run_index.sizes([runtime.keys.runs_in_status("completed")]) == [0]
    assert runtime.redis.scard(runtime.keys.run_indexes) == 0


def test_a_runs_sub_runs_come_from_its_parent_index_and_survive_a_rebuild(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run that invokes another function, and the indexes rebuilt from the records
    @function(id="child-fn", trigger=event("app/child"), retries=0, registry=registry)
    def child(ctx: Context) -> int:
        return 2

    @function(id="parent-fn", trigger=event("app/parent"), retries=0, registry=registry)
    def parent(ctx: Context) -> int:
        return int(ctx.step.invoke("kid", "child-fn", {"n": 1}))

    runtime.register_functions()
    parent_id = publish({"name": "app/parent"}, runtime=runtime).run_ids[0]
    drain(runtime)
    for key in runtime.redis.scan_iter(f"{runtime.keys.prefix}:runs:*"):
        runtime.redis.delete(key)
    trim_history(runtime)
    # When the parent's page is gathered
    page = run_page(runtime, parent_id)
    # Then it lists the child run, found through the parent index
    assert page is not None and [r.function_id for r in page.children] == ["child-fn"]
    indexed = runtime.run_index.newest(runtime.keys.runs_of_parent(parent_id), 0, 0, 10)
    assert indexed == [page.children[0].id]


def _stubborn_run(runtime: Runtime, registry: FunctionRegistry, clock: ManualClock) -> str:
    """A run whose one step failed twice and then succeeded, returning a value that holds
    an "n" of its own."""
    tries: list[int] = []

    def third_time_lucky() -> dict[str, int]:
        tries.append(1)
        if len(tries) < 3:
            raise RuntimeError("not yet")
        return {"n": 99}

    @function(id="stubborn", trigger=event("app/stubborn"), retries=3, registry=registry)
    def stubborn(ctx: Context) -> object:
        return ctx.step.run("call", third_time_lucky)

    runtime.register_functions()
    run_id = publish({"name": "app/stubborn", "data": {}}, runtime=runtime).run_ids[0]
    for _ in range(3):
        drain(runtime)
        clock.advance(60)
    return run_id


def test_step_tries_reads_the_most_tries_of_each_runs_steps(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose step took three tries (its value holding an "n" of its own), and a
    # run that recorded no step
    stubborn_id = _stubborn_run(runtime, registry, clock)

    @function(id="stepless", trigger=event("app/stepless"), registry=registry)
    def stepless(ctx: Context) -> int:
        return 1

    runtime.register_functions()
    stepless_id = publish({"name": "app/stepless", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    # When the index is asked for their step tries
    found = runtime.run_index.step_tries([stubborn_id, stepless_id, "r-unknown"])
    # Then the step's three tries count, not the value's "n", and the others have none
    assert found == [3, 0, 0], found


def test_step_tries_are_read_from_the_run_not_from_its_steps(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose step took three tries, its journal then gone from Redis
    run_id = _stubborn_run(runtime, registry, clock)
    runtime.redis.delete(runtime.keys.journal(run_id))
    # When the index is asked for its step tries
    found = runtime.run_index.step_tries([run_id])
    # Then they still count: the commits kept them in the run's hash, no step is read
    assert found == [3], found


def test_step_tries_of_a_run_recorded_without_them_are_read_from_its_journal(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose hash does not keep its step tries (recorded before it did so)
    run_id = _stubborn_run(runtime, registry, clock)
    runtime.redis.hdel(runtime.keys.run(run_id), "step_tries")
    # When the index is asked for its step tries / Then its journal answers
    assert runtime.run_index.step_tries([run_id, "r-unknown"]) == [3, 0]


def test_run_index_statuses_reads_each_runs_status_and_none_for_an_unknown_one(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given one run that failed and one still sleeping
    old_id = _old_failed_run_then_newer_ones(runtime, registry, clock, newer=0)

    @function(id="napper", trigger=event("app/nap"), registry=registry)
    def napper(ctx: Context) -> None:
        ctx.step.sleep("nap", 60)

    runtime.register_functions()
    napping = publish({"name": "app/nap", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    # When their statuses are read with a run nobody made
    statuses = runtime.run_index.statuses([old_id, napping, "r-nobody"])
    # Then each is the ledger's (with the event a waiting run waits for), and the unknown
    # run has none
    assert statuses == [("failed", ""), ("sleeping", ""), None]
