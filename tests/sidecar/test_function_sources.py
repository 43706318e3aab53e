"""A source's functions are replaced as one set; its errors and failures reach the agent."""

from __future__ import annotations

import json

import pytest

from harness.redaction import MASK, register_secret
from harness.runtime import Runtime, event
from harness.runtime.function_sources import (
    FILE_SOURCE,
    LoadError,
    Origin,
    RunFailure,
    record_failure,
    replace_source,
)
from harness.runtime.functions import FunctionSpec
from harness.sidecar.status import agent_notes
from tests.secrets_registry import forget_registered_secrets


def _spec(function_id: str) -> tuple[FunctionSpec, Origin]:
    spec = FunctionSpec(id=function_id, triggers=(event("app/x"),), queue="sidecar")
    return spec, Origin(source=FILE_SOURCE, file=f"{function_id}.py")


def test_replace_source_removes_functions_it_no_longer_lists(runtime: Runtime) -> None:
    # Given a fleet function and two file functions
    fleet = FunctionSpec(id="fleet-fn", triggers=(event("app/x"),))
    runtime.triggers.register([fleet])
    replace_source(runtime, FILE_SOURCE, {"a": _spec("a"), "b": _spec("b")}, [])

    # When the file source is replaced by a set without `a`
    replace_source(runtime, FILE_SOURCE, {"b": _spec("b")}, [])

    # Then `a` is gone, `b` and the fleet's function remain
    assert {s.id for s in runtime.triggers.specs()} == {"b", "fleet-fn"}


def test_agent_notes_show_load_errors_and_recent_failures(runtime: Runtime) -> None:
    # Given a load error and a failed run
    errors = [LoadError(file="bad.py", line=3, error="SyntaxError: invalid syntax")]
    replace_source(runtime, FILE_SOURCE, {}, errors)
    failure = RunFailure(function_id="b", run_id="r1", error="boom", at_ms=runtime.now_ms())
    record_failure(runtime, FILE_SOURCE, failure)

    # When the agent's notes are read
    notes = agent_notes(runtime)

    # Then both are there, briefly
    assert "- bad.py:3: SyntaxError: invalid syntax" in notes
    assert "- b (run r1," in notes and notes.endswith("boom")


def test_agent_notes_are_empty_when_all_is_well(runtime: Runtime) -> None:
    replace_source(runtime, FILE_SOURCE, {"b": _spec("b")}, [])
    assert agent_notes(runtime) == ""


def test_agent_notes_mask_a_secret_in_a_failure_recorded_unmasked(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a failure recorded by a process that did not know the secret (an old record)
    forget_registered_secrets(monkeypatch)
    error, at = "KeyError: pw-0123456789", runtime.now_ms()
    old = {"function_id": "b", "run_id": "r1", "error": error, "at_ms": at}
    runtime.redis.lpush(runtime.keys.function_failures(FILE_SOURCE), json.dumps(old))
    # When the secret is known and the agent's notes are read
    register_secret("pw-0123456789")
    notes = agent_notes(runtime)
    # Then the note is there without the secret
    assert notes.endswith(f"KeyError: {MASK}"), notes
