"""The sidecar's supervisor is a long-lived process that only watches, validates and replaces
its child: it holds neither Celery (the executor's) nor the fleet's function modules, whose
ids it asks a short-lived process for (checked in a fresh interpreter by `sys.modules`)."""

from __future__ import annotations

from pathlib import Path

from channels.delivery import SEND_REPLY
from harness.agent.handlers import HANDLE_MESSAGE
from harness.sidecar.builtins import BUILTIN_IDS
from harness.sidecar.supervisor import reserved_ids
from tests.fresh_imports import loaded_after

FLEET_MODULES = ("harness.agent.handlers", "channels.handlers", "celery", "kombu")


def test_sidecar_supervisor_module_imports_no_celery(tmp_path: Path) -> None:
    # Given a fresh interpreter
    # When it imports the sidecar's supervisor
    loaded = loaded_after("import harness.sidecar.supervisor", ("celery", "kombu"), tmp_path)
    # Then Celery is not among its modules
    assert loaded == [], f"the sidecar's supervisor imported {loaded}"


def test_sidecar_reserved_ids_leave_no_fleet_module_in_the_supervisor(tmp_path: Path) -> None:
    # Given a fresh interpreter with the sidecar's supervisor
    code = "from harness.sidecar.supervisor import reserved_ids\nassert len(reserved_ids()) > 2"
    # When it lists the ids no file may take
    loaded = loaded_after(code, FLEET_MODULES, tmp_path)
    # Then it holds none of the fleet's function modules, nor Celery
    assert loaded == [], f"listing the reserved ids imported {loaded}"


def test_sidecar_reserved_ids_are_the_fleet_built_ins_and_the_sidecar_own() -> None:
    # Given the fleet's message handler and the reply sender, both built-in functions
    # When the supervisor lists the reserved ids through its short-lived process
    ids = reserved_ids()
    # Then they are among them, and so are the sidecar's own
    assert {HANDLE_MESSAGE, SEND_REPLY} | BUILTIN_IDS <= ids, f"reserved: {sorted(ids)}"
