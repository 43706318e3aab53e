"""Whether the sidecar serves the current text of a function's file, or a reload is due.

The sidecar reloads `functions/` about two seconds after the last change, so a function the
agent has just written or edited is, for a moment, not served or served from its old text.
The executor reads each file's digest before its host loads the folder and records it with
the function's origin (`Origin.digest`); comparing it with the file's digest now tells the
agent's `function_run` whether to wait for the reload. A digest read before the load can only
err towards waiting: a file changed between the digest and the import triggers another reload.
Helper files (`_x.py`) are not compared.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Literal

from harness.runtime import Runtime
from harness.runtime.function_sources import FILE_SOURCE, origins
from harness.workspace_files import UnsafePathError, files_in, read_bytes

log = logging.getLogger(__name__)

Serving = Literal["current", "stale", "pending", "absent"]
"""`current`: served from the file's text now; `stale`: served from an older text;
`pending`: not served yet, but a file of the folder names it; `absent`: neither."""


def file_digests(folder: Path) -> dict[str, str]:
    """File name -> sha256 of its bytes, for every `*.py` file of `folder` (links and files
    that cannot be read are left out). Never raises."""
    digests = {}
    try:
        names = [n for n in files_in(folder) if n.endswith(".py")]
    except OSError as exc:
        log.debug("cannot list %s: %s", folder, exc)
        return {}
    for name in names:
        try:
            digests[name] = hashlib.sha256(read_bytes(folder, name)).hexdigest()
        except (OSError, UnsafePathError) as exc:
            log.debug("cannot read %s: %s", name, exc)
    return digests


def serving(runtime: Runtime, folder: Path, function_id: str) -> Serving:
    """Whether `function_id` is served from the current text of its file in `folder` (see
    the module). An origin without a digest counts as current; a function of no file of the
    folder (the sidecar's built-ins) as absent. Raises on Redis errors."""
    origin = origins(runtime).get(function_id)
    digests = file_digests(folder)
    if origin is not None and (origin.source != FILE_SOURCE or not origin.file):
        return "absent"  # the sidecar's own built-ins, declared by no file of the folder
    if origin is not None:
        if not origin.digest or digests.get(origin.file, origin.digest) == origin.digest:
            return "current"
        return "stale"
    quoted = (f'"{function_id}"', f"'{function_id}'")
    for name in digests:
        try:
            text = read_bytes(folder, name).decode("utf-8", errors="replace")
        except (OSError, UnsafePathError):
            continue
        if any(q in text for q in quoted):
            return "pending"
    return "absent"
