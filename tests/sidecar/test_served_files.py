"""Whether the sidecar serves the current text of a function's file (`served_files`): what
the agent's `function_run` waits on after a write or an edit."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.runtime import Runtime, event
from harness.runtime.function_sources import FILE_SOURCE, Origin, replace_source
from harness.runtime.functions import FunctionSpec
from harness.sidecar.served_files import file_digests, serving

JOB = 'from harness.runtime import event, function\n\n@function(id="job", trigger=event("a/b"))\n'


def _served(runtime: Runtime, file: str, text: str, function_id: str = "job") -> None:
    """Record `function_id` as loaded by the sidecar from `file` when it read `text`."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    spec = FunctionSpec(id=function_id, triggers=(event("a/b"),))
    origin = Origin(source=FILE_SOURCE, file=file, digest=digest)
    replace_source(runtime, FILE_SOURCE, {function_id: (spec, origin)}, [])


def test_serving_is_current_when_the_file_is_what_the_sidecar_read(
    runtime: Runtime, tmp_path: Path
) -> None:
    # Given a file the sidecar loaded as it is now
    (tmp_path / "job.py").write_text(JOB)
    _served(runtime, "job.py", JOB)
    # Then the function is served from its current text
    assert serving(runtime, tmp_path, "job") == "current"


def test_serving_is_stale_after_an_edit_the_sidecar_has_not_loaded(
    runtime: Runtime, tmp_path: Path
) -> None:
    # Given a file edited after the sidecar read it
    _served(runtime, "job.py", JOB)
    (tmp_path / "job.py").write_text(JOB + "# fixed\n")
    # Then the function is served from an older text
    assert serving(runtime, tmp_path, "job") == "stale"


def test_serving_is_pending_for_a_new_file_and_absent_for_an_unknown_id(
    runtime: Runtime, tmp_path: Path
) -> None:
    # Given a new file naming a function the sidecar has not loaded yet
    (tmp_path / "job.py").write_text(JOB)
    # Then that id is pending, and an id no file names is absent
    assert serving(runtime, tmp_path, "job") == "pending"
    assert serving(runtime, tmp_path, "agent-handle-message") == "absent"


def test_file_digests_cover_python_files_only(tmp_path: Path) -> None:
    # Given a function file and a note
    (tmp_path / "job.py").write_text(JOB)
    (tmp_path / "notes.md").write_text("x")
    # Then only the function file has a digest
    assert list(file_digests(tmp_path)) == ["job.py"]
    assert file_digests(tmp_path / "missing") == {}
