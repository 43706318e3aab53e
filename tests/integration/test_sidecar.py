"""The sidecar with a real Redis, a real scheduler and real child processes.

The tests share one sidecar (starting one takes seconds); each uses its own files and ids.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.agent.handlers import HANDLE_MESSAGE, handle_message
from harness.agent.workspace import default_shipped_skills, default_template
from harness.runtime import event
from harness.runtime.function_sources import FILE_SOURCE, Origin, load_errors, replace_source
from harness.runtime.functions import FunctionSpec
from harness.runtime.presence import live_members
from harness.sidecar.status import agent_notes, function_table
from tests.integration.conftest import ROOT
from tests.integration.sidecar_fleet import SidecarFleet, sidecar_fleet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
__all__ = ["sidecar_fleet"]

GREET = """
from harness.runtime import event, function
from _words import GREETING


@function(id="greet", trigger=event("test/greet"))
def greet(ctx):
    return f"{GREETING}, {ctx.event.data['name']}"
"""


def _returning(function_id: str, value: str) -> str:
    """The source of a function file: `function_id`, run by the event `test/<function_id>`,
    returns the string `value`."""
    return f"""
from harness.runtime import event, function


@function(id="{function_id}", trigger=event("test/{function_id}"))
def {function_id}(ctx):
    return "{value}"
"""


VERSIONED = """
from harness.runtime import event, function


@function(id="versioned", trigger=event("test/versioned"))
def versioned(ctx):
    return "{version}"
"""


def test_sidecar_module_written_while_running_handles_an_event(sidecar_fleet: SidecarFleet) -> None:
    # Given a running sidecar
    # When a module and its helper are written
    sidecar_fleet.write("_words.py", 'GREETING = "hello"\n')
    sidecar_fleet.write("greet.py", GREET)
    sidecar_fleet.wait_registered("greet")

    # Then a published event runs it, on the sidecar's queue
    assert sidecar_fleet.result_of("test/greet", {"name": "Ada"}) == "hello, Ada"
    spec = next(s for s in sidecar_fleet.runtime().triggers.specs() if s.id == "greet")
    assert spec.queue == "sidecar"


def test_sidecar_edit_of_a_module_changes_behaviour(sidecar_fleet: SidecarFleet) -> None:
    # Given a loaded function
    sidecar_fleet.write("versioned.py", VERSIONED.format(version="v1"))
    sidecar_fleet.wait_registered("versioned")
    sidecar_fleet.eventually("test/versioned", {}, "v1")

    # When its file is edited
    sidecar_fleet.write("versioned.py", VERSIONED.format(version="v2"))

    # Then new events run the new code
    sidecar_fleet.eventually("test/versioned", {}, "v2")


def test_sidecar_edit_of_only_a_helper_changes_behaviour(sidecar_fleet: SidecarFleet) -> None:
    # Given a function that uses a `_` helper module
    sidecar_fleet.write("_salute.py", 'WORD = "hi"\n')
    sidecar_fleet.write(
        "salute.py",
        """
        from harness.runtime import event, function
        import _salute


        @function(id="salute", trigger=event("test/salute"))
        def salute(ctx):
            return _salute.WORD
        """,
    )
    sidecar_fleet.wait_registered("salute")
    sidecar_fleet.eventually("test/salute", {}, "hi")

    # When only the helper changes
    sidecar_fleet.write("_salute.py", 'WORD = "hello again"\n')

    # Then the function sees the new helper (the child was replaced, not reloaded)
    sidecar_fleet.eventually("test/salute", {}, "hello again")


def test_sidecar_deleted_module_is_unregistered(sidecar_fleet: SidecarFleet) -> None:
    # Given a loaded function
    path = sidecar_fleet.write("doomed.py", _returning("doomed", "alive"))
    sidecar_fleet.wait_registered("doomed")

    # When its file is deleted
    path.unlink()

    # Then it is unregistered and its event starts no run
    sidecar_fleet.wait_registered("doomed", present=False)
    assert sidecar_fleet.run_ids_for("test/doomed", {}) == ()


def test_sidecar_broken_module_is_reported_while_others_keep_working(
    sidecar_fleet: SidecarFleet,
) -> None:
    # Given a working function
    sidecar_fleet.write("steady.py", _returning("steady", "steady"))
    sidecar_fleet.wait_registered("steady")

    # When a module with a syntax error and one with a bad cron are written
    sidecar_fleet.write("broken.py", "def oops(:\n    pass\n")
    sidecar_fleet.write(
        "badcron.py",
        """
        from harness.runtime import cron, function


        @function(id="badcron", trigger=cron("every morning"))
        def badcron(ctx):
            return None
        """,
    )
    rt = sidecar_fleet.runtime()
    wait_for(
        lambda: {"broken.py", "badcron.py"} <= {e.file for e in load_errors(rt, FILE_SOURCE)},
        what="both load errors to be recorded\n" + sidecar_fleet.logs(),
    )

    # Then the others keep working
    assert sidecar_fleet.result_of("test/steady", {}) == "steady"
    # and the CLI lists the errors with their lines
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "functions", "--json"],
        cwd=ROOT, env=sidecar_fleet.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    table = json.loads(out.stdout)
    errors = {e["file"]: e for e in table["load_errors"]}
    assert errors["broken.py"]["line"] == 1, errors
    assert "cron" in errors["badcron.py"]["error"] and errors["badcron.py"]["line"] == 5, errors
    assert table["sidecar_alive"] is True
    assert any(f["id"] == "steady" and f["file"] == "steady.py" for f in table["functions"])
    # and its table says the same
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "functions"],
        cwd=ROOT, env=sidecar_fleet.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "failed to load broken.py:1: SyntaxError" in out.stdout, out.stdout
    assert "sidecar: running" in out.stdout, out.stdout
    # and the agent sees them when it next thinks
    notes = agent_notes(rt)
    assert "broken.py:1" in notes and "badcron.py:5" in notes, notes

    (sidecar_fleet.functions / "broken.py").unlink()
    (sidecar_fleet.functions / "badcron.py").unlink()


def test_sidecar_refuses_a_file_that_takes_a_built_in_id(sidecar_fleet: SidecarFleet) -> None:
    # Given no worker has registered the agent's handler in this fleet's trigger table
    # When a file declares a function with the handler's id
    sidecar_fleet.write(
        "hijack.py",
        """
        from harness.runtime import event, function


        @function(id="agent-handle-message", trigger=event("agent.message.received"))
        def hijack(ctx):
            return "mine"
        """,
    )
    rt = sidecar_fleet.runtime()

    # Then it is a load error, and the id is not registered by the sidecar
    error = wait_for(
        lambda: next((e for e in load_errors(rt, FILE_SOURCE) if e.file == "hijack.py"), None),
        what="the load error of hijack.py\n" + sidecar_fleet.logs(),
    )
    assert "built-in" in str(error), error
    specs = {s.id: s for s in rt.triggers.specs()}
    assert "agent-handle-message" not in specs or specs["agent-handle-message"].queue != "sidecar"
    (sidecar_fleet.functions / "hijack.py").unlink()


def test_sidecar_cron_function_fires(sidecar_fleet: SidecarFleet) -> None:
    # Given a function on a cron of every second (croniter's sixth field)
    path = sidecar_fleet.write(
        "ticker.py",
        """
        from harness.runtime import cron, function


        @function(id="ticker", trigger=cron("* * * * * *"))
        def ticker(ctx):
            return ctx.event.data["tick"]
        """,
    )
    sidecar_fleet.wait_registered("ticker")
    rt = sidecar_fleet.runtime()

    # Then the scheduler fires it and the sidecar completes a run
    wait_for(
        lambda: any(
            r.function_id == "ticker" and r.status == "completed" for r in rt.ledger.recent(200)
        ),
        what="a completed run of the cron function\n" + sidecar_fleet.logs(),
    )
    # and `harness functions` shows its next tick and last run
    row = next(r for r in function_table(rt, set()).functions if r.id == "ticker")
    assert row.next_cron is not None and row.source == "file" and row.file == "ticker.py"
    assert row.last_run is not None
    path.unlink()


def test_sidecar_function_message_starts_an_agent_run(sidecar_fleet: SidecarFleet) -> None:
    # Given the agent's built-in handler in the trigger table (as fleet workers register it)
    rt = sidecar_fleet.runtime()
    rt.triggers.register([handle_message.spec])
    sidecar_fleet.write(
        "nudge.py",
        """
        from harness.runtime import event, function


        @function(id="nudge", trigger=event("test/nudge"))
        def nudge(ctx):
            ctx.step.send_event("ask-agent", {
                "name": "agent.message.received",
                "data": {
                    "message": "The build broke; tell the user.",
                    "session_key": "system-nudge",
                    "channel": "system",
                    "sender": {"id": "system", "name": "nudge"},
                    "destination": {"chat_id": "none"},
                },
            })
            return "asked"
        """,
    )
    sidecar_fleet.wait_registered("nudge")

    # When the function runs
    assert sidecar_fleet.result_of("test/nudge", {}) == "asked"

    # Then a run of the agent's handler exists for the system session
    runs = [r for r in rt.ledger.recent(200) if r.function_id == HANDLE_MESSAGE]
    assert runs, "no agent run was started"
    assert runs[0].singleton == f"{HANDLE_MESSAGE}:system-nudge"


def test_sidecar_runaway_function_is_stopped_by_its_timeout(sidecar_fleet: SidecarFleet) -> None:
    # Given a function that never returns, with a one-second timeout
    sidecar_fleet.write(
        "runaway.py",
        """
        from harness.runtime import event, function


        def spin():
            while True:
                pass


        @function(id="runaway", trigger=event("test/runaway"), timeout=1)
        def runaway(ctx):
            ctx.step.run("spin", spin)
        """,
    )
    sidecar_fleet.wait_registered("runaway")
    rt = sidecar_fleet.runtime()

    # When it runs
    run_id = sidecar_fleet.run_ids_for("test/runaway", {})[0]

    # Then the run fails with a timeout error and the sidecar comes back for other functions
    record = wait_for(
        lambda: (r := rt.ledger.run(run_id)) and r.status == "failed" and r,
        what="the runaway run to fail\n" + sidecar_fleet.logs(),
    )
    assert "RunTimeoutError" in record.error, record
    (sidecar_fleet.functions / "runaway.py").unlink()
    sidecar_fleet.write("after.py", _returning("after", "fine"))
    sidecar_fleet.wait_registered("after")
    assert sidecar_fleet.result_of("test/after", {}) == "fine"
    # and the agent hears of the failure
    wait_for(lambda: "runaway" in agent_notes(rt), what="the failure in the agent's notes")


def _skill_blocks() -> list[str]:
    blocks = []
    for skill in ("durable-functions.md", "managing-functions.md"):
        text = (default_shipped_skills() / skill).read_text()
        blocks += re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    return blocks


def test_sidecar_loads_every_skill_template_and_the_example(sidecar_fleet: SidecarFleet) -> None:
    # Given every code block of the functions skills, and the template's example, as files
    blocks = _skill_blocks()
    assert len(blocks) >= 5
    for index, block in enumerate(blocks):
        sidecar_fleet.write(f"skill_{index}.py", block)
    example = default_template() / "functions" / "example_ping.py"
    sidecar_fleet.write("example_ping.py", example.read_text())

    # When the sidecar loads them
    sidecar_fleet.wait_registered("example-ping")

    # Then every one loaded, and the example answers
    rt = sidecar_fleet.runtime()
    names = {f"skill_{i}.py" for i in range(len(blocks))}
    assert not [e for e in load_errors(rt, FILE_SOURCE) if e.file in names]
    registered = sidecar_fleet.registered()
    for expected in ("check-build", "welcome-new-customer", "morning-triage", "ping-back"):
        assert expected in registered, registered
    assert sidecar_fleet.result_of("example/ping", {"text": "hi"})["pong"] == "hi"


def _child_pids(fleet: SidecarFleet) -> set[int]:
    return {int(m.id.rsplit(":", 1)[1]) for m in live_members(fleet.runtime(), "sidecar")}


def test_sidecar_replaces_a_child_that_dies(sidecar_fleet: SidecarFleet) -> None:
    # Given a loaded function and the child running it
    sidecar_fleet.write("survivor.py", _returning("survivor", "here"))
    sidecar_fleet.wait_registered("survivor")
    assert sidecar_fleet.result_of("test/survivor", {}) == "here"
    before = _child_pids(sidecar_fleet)

    # When the child is killed outright (presence may still list a replaced child: skip it)
    for pid in before:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)

    # Then a new child takes over without any file change
    wait_for(
        lambda: _child_pids(sidecar_fleet) - before,
        what="a new sidecar child\n" + sidecar_fleet.logs(),
    )
    assert sidecar_fleet.result_of("test/survivor", {}) == "here"


INFLIGHT = """
import os
import time

from harness.runtime import event, function


def slow():
    time.sleep({sleep})
    return "{version}"


@function(id="inflight", trigger=event("test/inflight"))
def inflight(ctx):
    first = ctx.step.run("first", os.getpid)
    second = ctx.step.run("slow", slow)
    return [first, second]
"""


def test_sidecar_run_in_flight_during_a_reload_resumes_on_the_new_code(
    sidecar_fleet: SidecarFleet,
) -> None:
    # Given a run of v1 that completed its first step and is in a long second step
    sidecar_fleet.write("inflight.py", INFLIGHT.format(sleep=60, version="v1"))
    sidecar_fleet.wait_registered("inflight")
    rt = sidecar_fleet.runtime()
    run_id = sidecar_fleet.run_ids_for("test/inflight", {})[0]
    wait_for(lambda: "first:0" in rt.ledger.journal(run_id), what="the first step")
    first_pid = rt.ledger.journal(run_id)["first:0"]["v"]

    # When the file is replaced by v2 (whose second step is quick)
    sidecar_fleet.write("inflight.py", INFLIGHT.format(sleep=0, version="v2"))

    # Then the run completes on v2 without running its completed first step again
    record = wait_for(
        lambda: (r := rt.ledger.run(run_id)) and r.status == "completed" and r,
        timeout=60,
        what="the run to complete on the new child\n" + sidecar_fleet.logs(),
    )
    assert record.result == [first_pid, "v2"]


def test_disabled_sidecar_unregisters_old_functions_and_idles(
    redis_url: str, tmp_path: Path
) -> None:
    # Given functions an earlier sidecar registered
    fleet = SidecarFleet(
        redis_url=redis_url, workspace=tmp_path / "ws", extra_env={"SIDECAR_ENABLED": "false"}
    )
    fleet.functions.mkdir(parents=True)
    fleet.write("old.py", VERSIONED.format(version="old"))
    spec = FunctionSpec(id="old", triggers=(event("test/old"),), queue="sidecar")
    replace_source(
        fleet.runtime(), FILE_SOURCE, {"old": (spec, Origin(source=FILE_SOURCE, file="old.py"))}, []
    )

    # When the sidecar starts with SIDECAR_ENABLED=false
    fleet.start("sidecar", "sidecar")
    try:
        # Then the old functions are gone, nothing is loaded, and the process keeps running
        fleet.wait_registered("old", present=False)
        assert "versioned" not in fleet.registered()
        assert fleet.procs["sidecar"].poll() is None
    finally:
        fleet.stop()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_sidecar_child_ends_when_its_supervisor_is_killed(redis_url: str, tmp_path: Path) -> None:
    # Given a running sidecar and its child
    fleet = SidecarFleet(redis_url=redis_url, workspace=tmp_path / "ws")
    fleet.functions.mkdir(parents=True)
    fleet.start("sidecar", "sidecar")
    try:
        fleet.wait_registered("sidecar-heartbeat")
        children = wait_for(lambda: _child_pids(fleet), what="the child's presence")
        assert isinstance(children, set)

        # When the supervisor is killed outright
        os.kill(fleet.procs["sidecar"].pid, signal.SIGKILL)

        # Then the child does not linger as an orphan consuming the queue
        wait_for(lambda: all(_gone(pid) for pid in children), what="the orphan child to end")
    finally:
        fleet.stop()
