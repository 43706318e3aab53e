"""The sidecar with a real Redis, a real scheduler and real child processes."""

from __future__ import annotations

import pytest

from tests.integration.sidecar_fleet import SidecarFleet, sidecar_fleet

pytestmark = pytest.mark.integration
__all__ = ["sidecar_fleet"]

GREET = """
from harness.runtime import event, function
from _words import GREETING


@function(id="greet", trigger=event("test/greet"))
def greet(ctx):
    return f"{GREETING}, {ctx.event.data['name']}"
"""


def test_sidecar_module_written_while_running_handles_an_event(sidecar_fleet: SidecarFleet) -> None:
    # Given a running sidecar with an empty functions folder
    # When a module and its helper are written
    sidecar_fleet.write("_words.py", 'GREETING = "hello"\n')
    sidecar_fleet.write("greet.py", GREET)
    sidecar_fleet.wait_registered("greet")

    # Then a published event runs it
    assert sidecar_fleet.result_of("test/greet", {"name": "Ada"}) == "hello, Ada"
