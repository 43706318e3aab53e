"""What a worker holds in memory from the start: its function modules and the agent's
dependencies import no PDF reader (pypdf, ~10 MB a worker) until a PDF arrives, and no HTML
parser, image library or JSON Schema validator (~10 MB together) until a page, an image, a
network or a structured answer needs one. Checked in a
fresh interpreter by `sys.modules`; the memory itself is measured by bench/worker_memory.py."""

from __future__ import annotations

from pathlib import Path

from tests.fresh_imports import loaded_after

WORKER_IMPORTS = """
import importlib
from harness.fleet_functions import BUILTIN_FUNCTION_MODULES
for module in BUILTIN_FUNCTION_MODULES:
    importlib.import_module(module)
import harness.agent.deps, harness.runtime.worker, harness.search.extract
"""


def test_a_workers_modules_import_no_pdf_reader(tmp_path: Path) -> None:
    # Given a fresh interpreter
    # When it imports what a worker imports before its first turn
    loaded = loaded_after(WORKER_IMPORTS, ("pypdf",), tmp_path)
    # Then pypdf is not among them: only reading a PDF loads it
    assert loaded == [], f"a worker's modules imported {loaded}"


def test_a_workers_modules_import_no_html_parser_image_library_or_schema_validator(
    tmp_path: Path,
) -> None:
    # Given a fresh interpreter
    # When it imports what a worker imports before its first turn
    loaded = loaded_after(WORKER_IMPORTS, ("bs4", "PIL", "jsonschema"), tmp_path)
    # Then Beautiful Soup, Pillow and jsonschema are not among them
    assert loaded == [], f"a worker's modules imported {loaded}"


STARTED_WORKER = """
from harness.runtime.celery_app import app
from harness.runtime.worker import run_worker
from harness.settings import get_settings


class Worker:  # Celery's worker, built and started as a worker process does, consuming nothing
    exitcode = 0

    def __init__(self, **options):
        pass

    def start(self):
        pass


app.Worker = Worker
run_worker(get_settings(), [], 1, ["harness"])
"""


def test_a_started_worker_holds_no_celery_command_line(tmp_path: Path) -> None:
    # Given a fresh interpreter
    # When it starts a worker (whose Celery worker returns at once)
    loaded = loaded_after(STARTED_WORKER, ("prompt_toolkit", "click_repl", "pygments"), tmp_path)
    # Then Celery's command line and its REPL were not imported to start it
    assert loaded == [], f"starting a worker imported {loaded}"
