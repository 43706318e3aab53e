"""Locks on shared files: a Redis lock named by the path under the shared root where one is
installed (several hosts), `flock` otherwise; the four writers of shared files take it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness import shared_lock
from harness.agent.memory.distill import DistillState, pending_logs
from harness.agent.memory.history import MemoryHistory
from harness.agent.memory.notes import append_note, log_path
from harness.agent.session import SessionLine, SessionStore
from harness.composition import install_shared_locks
from harness.errors import BusUnavailableError
from harness.llm.types import Message
from harness.runtime import Runtime
from harness.runtime.file_locks import RedisFileLocks
from harness.settings import Settings

NOW = datetime(2027, 1, 15, 10, 0, tzinfo=UTC)


@pytest.fixture
def shared_root(tmp_path: Path) -> Iterator[Path]:
    """A shared root; whatever a test installs is uninstalled after it."""
    yield tmp_path / "shared"
    shared_lock.install(None)


def _hasty(runtime: Runtime) -> RedisFileLocks:
    """Locks that give up at once, so a held lock shows as an error instead of a wait."""
    return RedisFileLocks(runtime.redis, runtime.keys, wait=0.01)


def test_lock_name_is_the_path_under_the_shared_root(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    assert shared_lock.lock_name(root / "state" / "s.jsonl", root.resolve()) == "state/s.jsonl"
    outside = tmp_path / "elsewhere" / "f"
    assert shared_lock.lock_name(outside, root.resolve()) == outside.resolve().as_posix()


def test_redis_lock_held_elsewhere_refuses_a_second_holder_until_released(
    runtime: Runtime,
) -> None:
    # Given one holder of the lock on a file
    locks = _hasty(runtime)
    with locks.hold("state/sessions/a.jsonl"):
        # When another asks for the same lock, Then it is refused
        with pytest.raises(BusUnavailableError), locks.hold("state/sessions/a.jsonl"):
            pass
        # And another file's lock is free
        with locks.hold("state/sessions/b.jsonl"):
            pass
    # And once released it can be taken again
    with locks.hold("state/sessions/a.jsonl"):
        pass


def _session_append(root: Path) -> Path:
    store = SessionStore(root / "state")
    store.append("chat", [SessionLine(message=Message.user("hi"))])
    return store.path_for("chat")


def _note_append(root: Path) -> Path:
    append_note(root / "workspace", "Ana moved to Porto.", NOW)
    return log_path(root / "workspace", NOW.date())


def _history_replace(root: Path) -> Path:
    workspace = root / "workspace"
    (workspace / "memory" / "history").mkdir(parents=True, exist_ok=True)
    MemoryHistory(workspace).replace("# Memory\n", reason="test", now=NOW)
    return workspace / "memory" / "history" / ".lock"


def _distill_read(root: Path) -> Path:
    path = log_path(root / "workspace", NOW.date())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# 2027-01-15\n\n### 10:00:00\nA note.\n")
    pending_logs(root / "workspace", DistillState())
    return path


WRITERS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "session store": (_session_append, "state/sessions/chat-"),
    "memory notes": (_note_append, "workspace/memory/2027-01-15.md"),
    "memory history": (_history_replace, "workspace/memory/history/.lock"),
    "distillation": (_distill_read, "workspace/memory/2027-01-15.md"),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_shared_file_writers_take_the_redis_lock_named_under_the_shared_root(
    runtime: Runtime, shared_root: Path, writer: str
) -> None:
    # Given the Redis locks installed for a shared root, and the writer's file made once
    act, name = WRITERS[writer]
    shared_lock.install(_hasty(runtime), shared_root)
    path = act(shared_root)
    lock = shared_lock.lock_name(path, shared_root.resolve())
    assert lock.startswith(name), lock
    # When another host holds that file's lock
    with RedisFileLocks(runtime.redis, runtime.keys).hold(lock):
        # Then the writer here cannot take it
        with pytest.raises(BusUnavailableError):
            act(shared_root)
    # And once released, it can
    act(shared_root)


def test_shared_root_installs_redis_locks_and_one_host_keeps_flock(
    runtime: Runtime, shared_root: Path
) -> None:
    # Given settings without, then with, a shared root
    one_host = Settings(_env_file=None, agent_workspace=shared_root / "ws")  # type: ignore[call-arg]
    several = Settings(_env_file=None, harness_shared_root=shared_root)  # type: ignore[call-arg]
    # Then only the second installs the Redis locks
    assert install_shared_locks(runtime, one_host) is False
    assert shared_lock.installed() is None
    assert install_shared_locks(runtime, several) is True
    assert isinstance(shared_lock.installed(), RedisFileLocks)


def test_redis_lock_lost_before_release_is_logged_not_raised(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a holder whose lock disappears while it writes (it expired: the holder stalled)
    locks = RedisFileLocks(runtime.redis, runtime.keys)
    with locks.hold("state/sessions/a.jsonl"):
        runtime.redis.delete(runtime.keys.file_lock("state/sessions/a.jsonl"))
    # Then leaving the block says so in the log, and the next holder takes it
    assert "expired before its holder was done" in caplog.text
    with locks.hold("state/sessions/a.jsonl"):
        pass
