"""`process_tree`: what a fleet process started, however deep, read from /proc."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from harness.fleet import process_tree
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

# A parent that starts one child and sleeps: a tree two deep.
PARENT = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"  # noqa: E501


@pytest.fixture
def parents() -> Iterator[list[subprocess.Popen[bytes]]]:
    started = [subprocess.Popen([sys.executable, "-c", PARENT]) for _ in range(2)]
    yield started
    for parent in started:
        for child in process_tree.descendants(parent.pid):
            process_tree.signal_process(child, signal.SIGKILL)
        parent.kill()
        parent.wait()


def test_process_tree_descendants_of_several_parents_are_found_in_one_reading(
    parents: list[subprocess.Popen[bytes]],
) -> None:
    # Given two parents, each with a child of its own
    first, second = parents
    wait_until(
        lambda: all(process_tree.descendants(p.pid) for p in parents), "both children to start"
    )
    # When the descendants of both are read at once
    both = process_tree.descendants(first.pid, second.pid)
    # Then each parent's child is among them, and nothing else is
    expected = process_tree.descendants(first.pid) | process_tree.descendants(second.pid)
    assert both == expected, f"expected the children of both parents {expected}, got {both}"
    assert len(both) == 2, f"expected one child per parent, got {both}"
