"""The write and edit tools tell the agent whether the function file it wrote loads."""

from __future__ import annotations

from pathlib import Path

from harness.settings import Settings
from harness.sidecar.tool_check import check_function_writes
from harness.tools import default_registry
from harness.tools.base import ToolContext

GOOD = (
    "from harness.runtime import cron, function\n\n\n"
    '@function(id="nightly", trigger=cron("0 2 * * *"))\n'
    "def nightly(ctx):\n    return None\n"
)


def test_write_of_a_function_file_reports_what_loaded(tmp_path: Path) -> None:
    # Given the agent's tools with the sidecar's check
    registry = default_registry(allow_shell=False)
    check_function_writes(registry, Settings(_env_file=None))  # type: ignore[call-arg]
    ctx = ToolContext(workspace=tmp_path)

    # When it writes a good function file
    outcome = registry.execute("write", {"path": "functions/nightly.py", "content": GOOD}, ctx)

    # Then the result names the function and its trigger
    assert not outcome.is_error, outcome.content
    assert (
        'loaded: functions `nightly`; triggers nightly: cron "0 2 * * *" (UTC)' in outcome.content
    )


def test_edit_that_breaks_a_function_file_reports_the_error_and_line(tmp_path: Path) -> None:
    # Given a good function file
    registry = default_registry(allow_shell=False)
    check_function_writes(registry, Settings(_env_file=None))  # type: ignore[call-arg]
    ctx = ToolContext(workspace=tmp_path)
    registry.execute("write", {"path": "functions/nightly.py", "content": GOOD}, ctx)

    # When an edit puts a bad cron expression in it
    edit = {"old_text": '"0 2 * * *"', "new_text": '"at 2am"'}
    outcome = registry.execute("edit", {"path": "functions/nightly.py", "edits": [edit]}, ctx)

    # Then the result says it is not loaded, with the line and the reason
    assert (
        "NOT loaded: nightly.py:4: InvalidFunctionError: invalid cron expression" in outcome.content
    )


def test_write_outside_functions_is_not_checked(tmp_path: Path) -> None:
    registry = default_registry(allow_shell=False)
    check_function_writes(registry, Settings(_env_file=None))  # type: ignore[call-arg]
    outcome = registry.execute(
        "write", {"path": "notes/x.py", "content": "x = ("}, ToolContext(workspace=tmp_path)
    )
    assert "sidecar" not in outcome.content


def test_edit_of_a_helper_reports_the_files_it_breaks(tmp_path: Path) -> None:
    # Given a function file that imports a helper
    registry = default_registry(allow_shell=False)
    check_function_writes(registry, Settings(_env_file=None))  # type: ignore[call-arg]
    ctx = ToolContext(workspace=tmp_path)
    registry.execute(
        "write", {"path": "functions/_shared.py", "content": "SCHEDULE = '0 2 * * *'\n"}, ctx
    )
    user = GOOD.replace('cron("0 2 * * *")', "cron(_shared.SCHEDULE)").replace(
        "from harness.runtime", "import _shared\nfrom harness.runtime"
    )
    registry.execute("write", {"path": "functions/nightly.py", "content": user}, ctx)

    # When the helper is rewritten with a value the function cannot use
    outcome = registry.execute(
        "write", {"path": "functions/_shared.py", "content": "SCHEDULE = 'nightly'\n"}, ctx
    )

    # Then the result names the function file that no longer loads
    assert "_shared.py is a helper; files that do NOT load:" in outcome.content
    assert "- nightly.py:" in outcome.content and "invalid cron" in outcome.content
