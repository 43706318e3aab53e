"""`Lazy`: a value built on its first use, once however many threads ask, and handed back for
closing only if it was built."""

from __future__ import annotations

import threading
import time

import pytest

from harness.lazy_value import Lazy


class _Builds:
    """A builder that records every value it built (each a new object)."""

    def __init__(self, *, slow: bool = False, fail_first: bool = False) -> None:
        self.built: list[object] = []
        self._slow = slow
        self._fail = fail_first
        self._lock = threading.Lock()

    def __call__(self) -> object:
        if self._slow:
            time.sleep(0.005)  # an SDK client takes a while to build: room for a race
        if self._fail:
            self._fail = False
            raise ConnectionError("not this time")
        value = object()
        with self._lock:
            self.built.append(value)
        return value


def test_a_lazy_value_is_built_by_the_first_get_and_then_shared() -> None:
    # Given a lazy value nobody has asked for
    builds = _Builds()
    lazy = Lazy(builds)
    assert builds.built == [] and lazy.built() is None, "the value was built before any get"
    # When it is asked for twice
    first, second = lazy.get(), lazy.get()
    # Then one value was built, and both asks got it
    assert builds.built == [first] and second is first and lazy.built() is first


def test_threads_asking_at_once_share_one_built_value() -> None:
    # Given a lazy value whose build takes a while, and threads that ask for it together
    builds = _Builds(slow=True)
    lazy = Lazy(builds)
    start = threading.Barrier(8)
    got: list[object] = []

    def ask() -> None:
        start.wait()
        got.append(lazy.get())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    # When they all ask
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one value was built, and every thread got it
    assert len(builds.built) == 1, f"{len(builds.built)} values were built, all but one leak"
    assert len(got) == 8 and all(value is builds.built[0] for value in got)


def test_a_build_that_raised_is_tried_again_by_the_next_get() -> None:
    # Given a lazy value whose first build raises
    builds = _Builds(fail_first=True)
    lazy = Lazy(builds)
    with pytest.raises(ConnectionError):
        lazy.get()
    # When it is asked for again
    value = lazy.get()
    # Then it was built this time
    assert builds.built == [value]


def test_taking_a_value_never_built_builds_none() -> None:
    # Given a lazy value nobody has asked for
    builds = _Builds()
    lazy = Lazy(builds)
    # When it is taken (to be closed), twice
    taken = [lazy.take(), lazy.take()]
    # Then there was nothing to take, and nothing was built for it
    assert taken == [None, None] and builds.built == []


def test_taking_a_built_value_hands_it_over_once_and_the_next_get_builds_anew() -> None:
    # Given a lazy value that was used
    builds = _Builds()
    lazy = Lazy(builds)
    used = lazy.get()
    # When it is taken twice and then asked for again
    taken = [lazy.take(), lazy.take()]
    fresh = lazy.get()
    # Then the used value was handed over once, and a new one was built for the new ask
    assert taken == [used, None]
    assert fresh is not used and builds.built == [used, fresh]
