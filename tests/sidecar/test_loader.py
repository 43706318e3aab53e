"""Loading a functions folder in-process: what is loaded, and how each failure is reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

from harness.runtime.functions import REGISTRY
from harness.sidecar.loader import load_folder

OK = """
from harness.runtime import cron, event, function


@function(id="{id}", trigger=[event("app/x"), cron("0 9 * * *", tz="Europe/Paris")])
def handler(ctx):
    return None
"""


def _write(folder: Path, name: str, source: str) -> None:
    (folder / name).write_text(textwrap.dedent(source))


def test_loader_loads_function_files_but_not_helpers_or_disabled_files(tmp_path: Path) -> None:
    # Given a function file, a helper and a disabled file
    _write(tmp_path, "one.py", OK.format(id="loader-one"))
    _write(tmp_path, "_helper.py", OK.format(id="loader-helper"))
    _write(tmp_path, "off.py", "# disabled\n" + OK.format(id="loader-off"))

    # When the folder is loaded
    loaded = load_folder(tmp_path)

    # Then only the function file's function is there, with its triggers and line
    assert [f.id for f in loaded.report.functions] == ["loader-one"]
    assert loaded.report.functions[0].triggers == (
        "event app/x",
        'cron "0 9 * * *" (Europe/Paris)',
    )
    assert loaded.report.functions[0].line == 5
    assert loaded.report.disabled == ["off.py"]
    assert loaded.report.errors == []
    # and the process-wide registry was not touched
    assert REGISTRY.get("loader-one") is None


def test_loader_reports_each_broken_file_with_its_line(tmp_path: Path) -> None:
    # Given files broken in each way, and one good file
    _write(tmp_path, "a_syntax.py", "x = 1\ndef f(:\n")
    _write(tmp_path, "b_import.py", "import no_such_module_anywhere\n")
    _write(tmp_path, "c_raises.py", "x = 1\nraise RuntimeError('boom at import')\n")
    _write(tmp_path, "d_good.py", OK.format(id="loader-dup"))
    _write(tmp_path, "e_dup.py", OK.format(id="loader-dup"))
    _write(tmp_path, "f_builtin.py", OK.format(id="agent-handle-message"))

    # When the folder is loaded with a built-in id reserved
    loaded = load_folder(tmp_path, reserved={"agent-handle-message"})

    # Then the good file loads and every other one is an error with its line
    assert [f.id for f in loaded.report.functions] == ["loader-dup"]
    errors = {e.file: (e.line, e.error) for e in loaded.report.errors}
    assert errors["a_syntax.py"][0] == 2 and "SyntaxError" in errors["a_syntax.py"][1]
    assert errors["b_import.py"] == (
        1,
        "ModuleNotFoundError: No module named 'no_such_module_anywhere'",
    )
    assert errors["c_raises.py"] == (2, "RuntimeError: boom at import")
    assert errors["e_dup.py"] == (5, "function id 'loader-dup' is already declared in d_good.py")
    assert "built-in" in errors["f_builtin.py"][1]
