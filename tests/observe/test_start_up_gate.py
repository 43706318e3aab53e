"""The start-up gate on the log handler: a quietly started process holds routine lines back
until it says it is up, and prints every warning."""

from __future__ import annotations

import logging

from harness.runtime.banner import START_UP_ONLY, StartUpGate


def _record(level: int, name: str = "harness.test", **extra: object) -> logging.LogRecord:
    record = logging.LogRecord(name, level, __file__, 1, "a line", None, None)
    record.__dict__.update(extra)
    return record


def test_an_unarmed_gate_lets_every_line_through() -> None:
    # Given a gate nobody held (a process not started quietly)
    gate = StartUpGate()
    # Then routine, start-up-only and Celery lines all print
    assert gate.filter(_record(logging.INFO))
    assert gate.filter(_record(logging.INFO, **START_UP_ONLY))
    assert gate.filter(_record(logging.INFO, "celery.apps.worker"))


def test_a_held_gate_prints_warnings_and_the_up_line_then_opens() -> None:
    # Given a held gate
    gate = StartUpGate()
    gate.hold()
    # Then routine lines wait, warnings and errors do not
    assert not gate.filter(_record(logging.INFO))
    assert gate.filter(_record(logging.WARNING))
    assert gate.filter(_record(logging.ERROR, "celery.apps.worker"))
    # When the process says it is up
    assert gate.filter(_record(logging.INFO, harness_up_line=True))
    gate.open()
    # Then later routine lines print, but not the start-up-only ones
    assert gate.filter(_record(logging.INFO))
    assert not gate.filter(_record(logging.INFO, **START_UP_ONLY))
    assert not gate.filter(_record(logging.INFO, "celery.apps.worker")), "Celery's `ready.`"


def test_a_part_held_on_its_own_waits_for_its_own_up_line() -> None:
    # Given a held gate, and the sidecar's loggers held as a part of their own (a worker that
    # supervises the sidecar on a thread)
    gate = _held_with_the_sidecar()
    # When the worker says it is up
    gate.said_up("harness.runtime.worker")
    # Then the worker's routine lines print, the sidecar's still wait (its warnings do not)
    assert gate.filter(_record(logging.INFO, "harness.runtime.worker"))
    assert not gate.filter(_record(logging.INFO, "harness.sidecar.supervisor"))
    assert gate.filter(_record(logging.WARNING, "harness.sidecar"))
    assert gate.filter(_record(logging.INFO, "harness.sidecarish")), "not under the prefix"
    # When the sidecar says it is up
    gate.said_up("harness.sidecar")
    # Then its routine lines print too
    assert gate.filter(_record(logging.INFO, "harness.sidecar.supervisor"))


def test_a_part_that_says_it_is_up_first_does_not_open_the_process() -> None:
    gate = _held_with_the_sidecar()
    gate.said_up("harness.sidecar")
    assert gate.filter(_record(logging.INFO, "harness.sidecar"))
    assert not gate.filter(_record(logging.INFO, "harness.runtime.worker"))


def _held_with_the_sidecar() -> StartUpGate:
    gate = StartUpGate()
    gate.hold()
    gate.hold_part("harness.sidecar")
    return gate
