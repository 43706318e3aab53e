"""Loading `workspace/functions`: import each file, collect what it declares, report failures.

A file is loaded when its name ends in `.py`, does not start with `_` (helpers) and its first
line is not `# disabled`. Each file is imported as `sidecar_functions.<stem>` with the folder
also on `sys.path`, so `import _helpers` and `from . import _helpers` both work. A file that
fails for any reason (syntax, import, an exception at import time, a bad trigger, a function
id declared twice or equal to a built-in's) becomes a `LoadError` with its line, and its
functions are left out; the other files are unaffected.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import traceback
import types
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from harness.agent.networks.declare import capture_networks
from harness.runtime.function_sources import Declaration, LoadError
from harness.runtime.functions import (
    CronTrigger,
    Function,
    FunctionRegistry,
    capture_declarations,
)
from harness.workspace_files import UnsafePathError, files_in, open_fd

PACKAGE = "sidecar_functions"
log = logging.getLogger(__name__)
DISABLED_MARK = "# disabled"
MAX_ERROR_CHARS = 600


class LoadedFunction(BaseModel, frozen=True):
    """One function a file declares, as reports show it."""

    id: str
    file: str
    line: int
    triggers: tuple[str, ...]


class LoadReport(BaseModel):
    """What loading the folder gave: the functions, the failed files, the disabled files."""

    functions: list[LoadedFunction] = []
    errors: list[LoadError] = []
    disabled: list[str] = []

    def for_file(self, name: str) -> tuple[list[LoadedFunction], list[LoadError]]:
        """The functions and errors of one file."""
        return (
            [f for f in self.functions if f.file == name],
            [e for e in self.errors if e.file == name],
        )


@dataclass
class LoadedFolder:
    """A load's report, plus the loaded functions themselves (in this process only)."""

    report: LoadReport
    functions: list[Function] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # function id -> file
    declarations: list[Declaration] = field(default_factory=list)  # `@network`s, with files


class _Collector(FunctionRegistry):
    """Records every declaration in order, duplicates included."""

    def __init__(self) -> None:
        super().__init__()
        self.declared: list[Function] = []

    def register(self, fn: Function) -> Function:
        self.declared.append(fn)
        return super().register(fn)


def function_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The files to load, sorted by name, and the names of disabled ones. Links are left out
    with a warning, and a `folder` that is itself a link has none (`harness.workspace_files`):
    the fleet never follows a link in the workspace."""
    try:
        names = files_in(folder.parent, folder.name)
    except UnsafePathError as exc:
        log.warning("no functions loaded: %s", exc)
        return [], []
    files, disabled = [], []
    for path in (folder / name for name in names if name.endswith(".py")):
        if path.name.startswith("_"):
            continue
        if _first_line(folder, path.name).strip().lower().startswith(DISABLED_MARK):
            disabled.append(path.name)
        else:
            files.append(path)
    return files, disabled


def describe_trigger(trigger: object) -> str:
    """A trigger as one short phrase: `event app/x.y`, `cron "0 9 * * *" (UTC)`."""
    if isinstance(trigger, CronTrigger):
        return f'cron "{trigger.expression}" ({trigger.tz})'
    name = getattr(trigger, "name", "?")
    condition = getattr(trigger, "if_", None)
    return f"event {name}" + (f" if {condition}" if condition else "")


def load_folder(
    folder: Path,
    *,
    reserved: Collection[str] = (),
    skip: Mapping[str, LoadError] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> LoadedFolder:
    """Import every function file of `folder` into this process; never raises for a file.

    `reserved` are ids the files may not use (built-in functions). `skip` maps file names to
    the error to record instead of importing them (a validation already found it). `on_start`
    is called with each file name before it is imported.
    """
    folder = folder.resolve()
    _never_cached_bytecode()
    _install_package(folder)
    files, disabled = function_files(folder)
    loaded = LoadedFolder(report=LoadReport(disabled=disabled))
    for path in files:
        if skip and path.name in skip:
            loaded.report.errors.append(skip[path.name])
            continue
        if on_start is not None:
            on_start(path.name)
        _load_file(path, folder, set(reserved), loaded)
    return loaded


def _load_file(path: Path, folder: Path, reserved: set[str], loaded: LoadedFolder) -> None:
    collector = _Collector()
    try:
        with capture_declarations(collector), capture_networks() as networks:
            _import(path)
    except (Exception, SystemExit) as exc:
        line, text = _locate(exc, path, folder)
        loaded.report.errors.append(LoadError(file=path.name, line=line, error=text))
        return
    problem = _id_problem(collector.declared, reserved, loaded.files)
    if problem is not None:
        fn, text = problem
        loaded.report.errors.append(LoadError(file=path.name, line=_line_of(fn), error=text))
        return
    loaded.declarations += [d.model_copy(update={"file": path.name}) for d in networks]
    for fn in collector.declared:
        loaded.functions.append(fn)
        loaded.files[fn.id] = path.name
        loaded.report.functions.append(
            LoadedFunction(
                id=fn.id,
                file=path.name,
                line=_line_of(fn),
                triggers=tuple(describe_trigger(t) for t in fn.spec.triggers),
            )
        )


def _id_problem(
    declared: list[Function], reserved: set[str], taken: Mapping[str, str]
) -> tuple[Function, str] | None:
    seen: set[str] = set()
    for fn in declared:
        if fn.id in seen:
            return fn, f"function id {fn.id!r} is declared twice in this file"
        if fn.id in reserved:
            return fn, f"function id {fn.id!r} is the id of a built-in function; rename it"
        if fn.id in taken:
            return fn, f"function id {fn.id!r} is already declared in {taken[fn.id]}"
        seen.add(fn.id)
    return None


def _never_cached_bytecode() -> None:
    """Compile the agent's files from their source on every load: no `__pycache__` is written
    into the workspace, and none found there is read. Python trusts a cached file by its
    source's modification time (whole seconds) and size, so an edit that keeps the size
    within the same second (`"v1"` to `"v2"`) would otherwise go on running the old code.
    Bytecode is looked for under an empty private folder instead, and never written."""
    sys.dont_write_bytecode = True
    if sys.pycache_prefix is None:
        empty = tempfile.mkdtemp(prefix="harness-no-bytecode-")
        sys.pycache_prefix = empty
        atexit.register(shutil.rmtree, empty, ignore_errors=True)


def _install_package(folder: Path) -> None:
    package = sys.modules.get(PACKAGE)
    if package is None:
        package = types.ModuleType(PACKAGE)
        sys.modules[PACKAGE] = package
    package.__path__ = [str(folder)]
    if str(folder) not in sys.path:
        sys.path.append(str(folder))  # appended: a file must never shadow the standard library


def _import(path: Path) -> None:
    name = f"{PACKAGE}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def _locate(exc: BaseException, path: Path, folder: Path) -> tuple[int, str]:
    """The line of `path` at fault, and the error's text (naming a helper file at fault)."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).name == path.name:
        return exc.lineno or 0, f"SyntaxError: {exc.msg}"
    line = 0
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in frames:
        if Path(frame.filename) == path:
            line = frame.lineno or 0
    inside = [f for f in frames if Path(f.filename).parent == folder]
    if inside and Path(inside[-1].filename) != path:
        text += f" (at {Path(inside[-1].filename).name}:{inside[-1].lineno})"
    if isinstance(exc, SyntaxError) and exc.filename:
        text += f" (at {Path(exc.filename).name}:{exc.lineno})"
    return line, text[:MAX_ERROR_CHARS]


def _line_of(fn: Function) -> int:
    code = getattr(fn.handler, "__code__", None)
    return int(code.co_firstlineno) if code is not None else 0


def _first_line(folder: Path, name: str) -> str:
    try:
        fd = open_fd(folder, name, os.O_RDONLY)
    except OSError:
        return ""
    with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
        return handle.readline()
