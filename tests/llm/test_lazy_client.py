"""`LazyClient`: an SDK client built on first use, once however many threads ask, and closed
only if it was built."""

from __future__ import annotations

import threading
import time

from harness.llm.lazy_client import LazyClient


class _Client:
    """A stand-in for an SDK client: counts its `close` calls."""

    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class _Builds:
    """A client builder that records every client it built."""

    def __init__(self, *, slow: bool = False) -> None:
        self.built: list[_Client] = []
        self._slow = slow
        self._lock = threading.Lock()

    def __call__(self) -> _Client:
        if self._slow:
            time.sleep(0.005)  # an SDK client takes a while to build: room for a race
        client = _Client()
        with self._lock:
            self.built.append(client)
        return client


def test_a_lazy_client_is_built_by_the_first_get_and_then_shared() -> None:
    # Given a lazy client nobody has asked for
    builds = _Builds()
    lazy = LazyClient(builds)
    assert builds.built == [], "the client was built before it was asked for"
    # When it is asked for twice
    first, second = lazy.get(), lazy.get()
    # Then one client was built, and both asks got it
    assert builds.built == [first] and second is first


def test_threads_asking_at_once_share_one_built_client() -> None:
    # Given a lazy client whose build takes a while, and threads that ask for it together
    builds = _Builds(slow=True)
    lazy = LazyClient(builds)
    start = threading.Barrier(8)
    got: list[_Client] = []

    def ask() -> None:
        start.wait()
        got.append(lazy.get())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    # When they all ask
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one client was built, and every thread got it
    assert len(builds.built) == 1, f"{len(builds.built)} clients were built, one leaks"
    assert all(client is builds.built[0] for client in got)


def test_closing_a_lazy_client_never_built_builds_none() -> None:
    # Given a lazy client nobody has asked for
    builds = _Builds()
    lazy = LazyClient(builds)
    # When it is closed, twice
    lazy.close()
    lazy.close()
    # Then no client was built to be closed
    assert builds.built == []


def test_closing_a_built_client_closes_it_once_and_the_next_get_builds_anew() -> None:
    # Given a lazy client that was used
    builds = _Builds()
    lazy = LazyClient(builds)
    used = lazy.get()
    # When it is closed twice and then asked for again
    lazy.close()
    lazy.close()
    fresh = lazy.get()
    # Then the used client was closed once, and a new one was built for the new ask
    assert used.closed == 1, f"the built client was closed {used.closed} times"
    assert fresh is not used and builds.built == [used, fresh]
