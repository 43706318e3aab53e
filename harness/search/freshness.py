"""Keeping the search index fresh without looking at every file before every query.

A process that serves the `search` tool keeps one `Freshness` (`shared_freshness`). The first
query of a corpus sets a watch on its folders (watchdog's `Observer`: inotify on Linux, a
single thread per process) and then lists every file of the corpus (a full sync, as before).
From then on the watcher marks the paths it sees change, and a query syncs only those
(`SearchIndex.sync_paths`: one `lstat` each, a read only when the stamp moved); a query
after no change looks at no file at all.

How soon a change is found:

- written by this process's own code (the file tools, memory notes and history, transcripts,
  all through `harness.file_writes`): by the very next query, which waits for no watcher;
- written by another process on this host (the bash sandbox, `harness knowledge add`, an
  editor, a sync tool): as soon as the watcher's thread has its event, milliseconds;
- unseen by the watcher (another host writing a network mount, an event lost to a full
  inotify queue, a folder no watch could be set on): by the first query at least `rescan`
  seconds (`SEARCH_RESCAN`, default 60) after the corpus's last full sync, which lists every
  file again. A corpus with no watch at all (the limit on watches reached, its root missing)
  is listed at every query, as with `rescan` 0, which starts no watcher.

A folder created, removed or renamed under a corpus re-sets its watches and lists it again
(a folder made after the watch was set, like `knowledge/` itself, is watched from then on),
and `harness knowledge reindex` emptying the index is seen (`SearchIndex.generation`).

Watches never follow a link: a corpus folder reached through one is not watched (its files
are not searched either, `harness.search.corpora`), watchdog's recursive watch skips linked
folders, and an event's path is only ever a hint to `lstat` it without following links.
At most `MAX_TRACKED` corpora are watched, the least recently searched dropped first.
"""

from __future__ import annotations

import atexit
import logging
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from harness import file_writes
from harness.search.corpora import Corpus
from harness.search.index import SearchIndex, Synced
from harness.workspace_files import lstat

log = logging.getLogger(__name__)

MAX_TRACKED = 256
DEFAULT_RESCAN_S = 60.0
_IGNORED_EVENTS = ("opened", "closed_no_write")


@dataclass
class _Tracked:
    """What one process knows of one corpus in one index."""

    corpus: Corpus
    full: bool = True  # the next query lists every file
    rewatch: bool = True  # the next query (re)sets the watches first
    blind: bool = False  # some folder has no watch: every query lists every file
    dirty: set[str] = field(default_factory=set)
    last_full: float = 0.0
    generation: int = -1
    watches: list[tuple[str, bool]] = field(default_factory=list)
    syncing: threading.Lock = field(default_factory=threading.Lock)


class _Handler(FileSystemEventHandler):
    """Hands every watched change to `Freshness.changed`."""

    def __init__(self, freshness: Freshness) -> None:
        self._freshness = freshness

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENTS:
            return
        if event.is_directory and event.event_type == "modified":
            return  # an entry of the folder changed: that entry has an event of its own
        for raw in (event.src_path, event.dest_path):
            if raw:
                self._freshness.changed(Path(os.fsdecode(raw)), folder=event.is_directory)


class Freshness:
    """Decides, per query, what of a corpus to sync (nothing, a few paths, or everything),
    from the watcher's events, this process's own writes and a clock; see the module.

    `rescan` seconds bound what the watcher cannot see (0: no watcher, list every file every
    query); `clock` gives seconds (monotonic); `observer` makes the watcher, started on the
    first query and stopped by `close`. Thread-safe."""

    def __init__(
        self,
        rescan: float = DEFAULT_RESCAN_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        observer: Callable[[], BaseObserver] = Observer,
    ) -> None:
        self.rescan = rescan
        self._clock = clock
        self._make_observer = observer
        self._observer: BaseObserver | None = None
        self._handler = _Handler(self)
        self._lock = threading.Lock()  # the tracked corpora; taken by the watcher's thread
        self._watching = threading.Lock()  # the observer and its watches; never under _lock
        self._tracked: OrderedDict[tuple[Path, str], _Tracked] = OrderedDict()
        self._watches: dict[tuple[str, bool], tuple[ObservedWatch, int]] = {}
        self._closed = False
        self._warned = False

    def bring_up_to_date(self, index: SearchIndex, corpus: Corpus) -> Synced:
        """Sync what of `corpus` may have changed since this process last synced it into
        `index`. A failing sync (raises) leaves the corpus to be listed whole next time."""
        tracked = self._track(index, corpus)
        with tracked.syncing:
            if tracked.rewatch and self.rescan > 0:
                self._set_watches(tracked)
            generation = index.generation()
            with self._lock:
                now = self._clock()
                whole = (
                    tracked.full
                    or tracked.blind
                    or self.rescan <= 0
                    or now - tracked.last_full >= self.rescan
                    or generation != tracked.generation
                )
                paths, tracked.dirty = tracked.dirty, set()
                tracked.full = False
                if whole:
                    tracked.last_full, tracked.generation = now, generation
            try:
                if whole:
                    return index.sync(corpus.key, corpus.listing(), corpus.read, corpus.parse)
                if not paths:
                    return Synced()
                stamps = {path: corpus.stamp(path) for path in sorted(paths)}
                return index.sync_paths(corpus.key, stamps, corpus.read, corpus.parse)
            except BaseException:
                with self._lock:
                    tracked.full = True
                raise

    def changed(self, path: Path, *, folder: bool = False) -> None:
        """Note that `path` (absolute) changed: a file of a tracked corpus is synced at its
        next query; a folder that holds (or held) corpus files has the corpus's watches set
        again and every file listed. Paths of no corpus are ignored. Quick; never raises."""
        with self._lock:
            for tracked in self._tracked.values():
                relative = _relative(tracked.corpus.root, path)
                if relative is None:
                    continue
                if folder:
                    if _holds_files(tracked.corpus, relative):
                        tracked.full = tracked.rewatch = True
                elif tracked.corpus.covers(relative):
                    tracked.dirty.add(relative)

    def pending(self, key: str) -> frozenset[str]:
        """The paths of the corpus `key` marked changed and not yet synced."""
        with self._lock:
            return frozenset(
                path for (_, k), t in self._tracked.items() if k == key for path in t.dirty
            )

    def watched(self) -> frozenset[Path]:
        """The folders being watched."""
        with self._watching:
            return frozenset(Path(folder) for folder, _ in self._watches)

    def close(self) -> None:
        """Stop the watcher and its thread, stop listening to this process's writes.
        Idempotent; a later query lists every file (no watch is set again)."""
        file_writes.unlisten(self._own_write)
        with self._watching:
            with self._lock:
                self._closed = True
                for tracked in self._tracked.values():
                    tracked.blind, tracked.rewatch, tracked.watches = True, False, []
            observer, self._observer = self._observer, None
            self._watches.clear()
            if observer is not None:
                observer.stop()
                observer.join()

    def _own_write(self, path: Path) -> None:
        self.changed(path)

    def _track(self, index: SearchIndex, corpus: Corpus) -> _Tracked:
        dropped: list[_Tracked] = []
        with self._lock:
            key = (index.path, corpus.key)
            tracked = self._tracked.get(key)
            if tracked is None:
                tracked = self._tracked[key] = _Tracked(corpus, blind=self._closed)
                tracked.rewatch = not self._closed
            self._tracked.move_to_end(key)
            while len(self._tracked) > MAX_TRACKED:
                dropped.append(self._tracked.popitem(last=False)[1])
        if dropped:
            with self._watching:
                for gone in dropped:
                    self._release(gone.watches)
                    gone.watches = []
        return tracked

    def _set_watches(self, tracked: _Tracked) -> None:
        """(Re)set the watches of `tracked`'s folders, then mark it for a full listing (what
        changed before a watch was set was seen by no one). Call with `syncing` held.

        Watches are set and unset holding `_watching` but never `_lock`: the watcher's thread
        holds watchdog's own lock while it hands an event to `changed`, which takes `_lock`,
        and `schedule` takes watchdog's lock."""
        wanted: list[tuple[str, bool]] = []
        blind = False
        for folder in tracked.corpus.folders:
            target = _nearest_folder(tracked.corpus.root, folder.path)
            if target is None:
                blind = True
                continue
            recursive = folder.recursive and target == folder.path
            wanted.append((os.fspath(tracked.corpus.root.joinpath(target)), recursive))
        with self._watching:
            if self._closed:
                return
            # Unset first, so a folder removed and made again gets a live watch.
            self._release(tracked.watches)
            tracked.watches = [spec for spec in dict.fromkeys(wanted) if self._acquire(spec)]
            blind = blind or len(tracked.watches) < len(dict.fromkeys(wanted))
            with self._lock:
                tracked.blind, tracked.rewatch, tracked.full = blind, blind, True

    def _acquire(self, spec: tuple[str, bool]) -> bool:
        """Hold a watch on `spec` (folder, recursive), setting it if new. `_watching` held."""
        if spec in self._watches:
            watch, count = self._watches[spec]
            self._watches[spec] = (watch, count + 1)
            return True
        try:
            if self._observer is None:
                self._observer = self._make_observer()
                self._observer.start()
                file_writes.listen(self._own_write)
            watch = self._observer.schedule(self._handler, spec[0], recursive=spec[1])
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning(
                    "search cannot watch %s (%s): its corpus is listed at every query", spec[0], exc
                )
            return False
        self._watches[spec] = (watch, 1)
        return True

    def _release(self, specs: list[tuple[str, bool]]) -> None:
        """Let go of watches; the last holder's going unsets one. `_watching` held."""
        for spec in specs:
            watch, count = self._watches.get(spec, (None, 0))
            if watch is None:
                continue
            if count > 1:
                self._watches[spec] = (watch, count - 1)
                continue
            del self._watches[spec]
            if self._observer is not None:
                try:
                    self._observer.unschedule(watch)
                except (KeyError, OSError):
                    pass  # its folder went away and the watch with it


def _relative(root: Path, path: Path) -> str | None:
    """`path` below `root` as a corpus path ("" for the root), or None when outside it."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    text = relative.as_posix()
    return "" if text == "." else text


def _holds_files(corpus: Corpus, folder: str) -> bool:
    """True when the folder `folder` is, contains or lies within one of `corpus`'s folders."""
    for held in corpus.folders:
        if folder == held.path or _inside(held.path, folder):
            return True
        if held.recursive and _inside(folder, held.path):
            return True
    return False


def _inside(path: str, folder: str) -> bool:
    return folder == "" or path.startswith(folder + "/")


def _nearest_folder(root: Path, folder: str) -> str | None:
    """`folder` if it exists below `root` as a real folder (no link on the way), else its
    nearest such ancestor (so its creation is seen); None when not even `root` is one."""
    parts = list(PurePosixPath(folder).parts)
    while True:
        candidate = "/".join(parts)
        try:
            info = lstat(root, candidate)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            return candidate
        if not parts:
            return None
        parts.pop()


_shared: dict[float, tuple[int, Freshness]] = {}
_shared_lock = threading.Lock()


def shared_freshness(rescan: float = DEFAULT_RESCAN_S) -> Freshness:
    """This process's `Freshness` for `rescan` (one per process: a child forked after the
    parent made one gets its own, whose watcher it starts). Closed at exit."""
    with _shared_lock:
        held = _shared.get(rescan)
        if held is not None and held[0] == os.getpid():
            return held[1]
        if held is not None:
            # A fork's copy: its watcher thread is not running in this process.
            file_writes.unlisten(held[1]._own_write)
        if not _shared:
            atexit.register(close_shared)
        freshness = Freshness(rescan)
        _shared[rescan] = (os.getpid(), freshness)
        return freshness


def close_shared() -> None:
    """Close and forget this process's shared `Freshness`es (their watcher threads stop); the
    next `shared_freshness` makes a new one. Idempotent."""
    with _shared_lock:
        held = [freshness for pid, freshness in _shared.values() if pid == os.getpid()]
        _shared.clear()
    for freshness in held:
        freshness.close()
