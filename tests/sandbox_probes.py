"""Fixtures that make the sandbox probes fail as they do on machines without bubblewrap or
Landlock (the probes' own seams: the `bwrap` found on PATH, the ABI landlockpy reports).
Registered as a plugin in `tests/conftest.py`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.tools import landlock_run as landlock_module
from harness.tools.sandbox import probe_landlock


def _kernel_abi(monkeypatch: pytest.MonkeyPatch, abi: int) -> Iterator[None]:
    """Make the kernel report Landlock ABI `abi` (0: none) to this process's probe."""
    monkeypatch.setattr(landlock_module, "abi_version", lambda: abi)
    probe_landlock.cache_clear()
    yield
    probe_landlock.cache_clear()


@pytest.fixture
def no_landlock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A kernel without Landlock, as the landlock_create_ruleset version query reports it."""
    yield from _kernel_abi(monkeypatch, 0)


@pytest.fixture
def landlock_abi_3(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A kernel with Landlock ABI 3: files only, no TCP rules."""
    yield from _kernel_abi(monkeypatch, 3)


def path_with_broken_bwrap(folder: Path) -> str:
    """PATH with, first, a `bwrap` in `folder` (created) that fails as it does where user
    namespaces are off; for this process or a child's environment."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return f"{folder}:{os.environ['PATH']}"


@pytest.fixture
def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `bwrap` first on PATH that fails as it does where user namespaces are off."""
    monkeypatch.setenv("PATH", path_with_broken_bwrap(tmp_path / "bin"))
    return tmp_path / "bin" / "bwrap"
