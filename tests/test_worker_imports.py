"""What a worker holds in memory from the start: its function modules and the agent's
dependencies import no PDF reader (pypdf, ~10 MB a worker) until a PDF arrives, and no HTML
parser, image library or JSON Schema validator (~10 MB together) until a page, an image, a
network or a structured answer needs one; on the model gateway's path (`MODEL_CALLS=gateway`)
it renders its model calls without importing a model SDK (tens of MB each). Checked in a
fresh interpreter by `sys.modules`; the memory itself is measured by bench/worker_memory.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


GATEWAY_TURN = """
import json
import json
from pathlib import Path

import pytest

import fakeredis

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.composition import extend_runtime
from harness.events import MESSAGE_RECEIVED
from harness.runtime import Runtime, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings

server = fakeredis.FakeServer()
registry = FunctionRegistry()
registry.register(handle_message)
runtime = extend_runtime(
    Runtime(
        redis=fakeredis.FakeRedis(server=server, decode_responses=True),
        aredis=fakeredis.FakeAsyncRedis(server=server, decode_responses=True),
        kicker=RecordingKicker(),
        registry=registry,
    )
)
runtime.register_functions()
settings = Settings(
    _env_file=None, agent_workspace=Path("ws"), mcp_config=Path("mcp.json"),
    llm_provider={provider!r}, anthropic_base_url="http://127.0.0.1:9",
    openai_base_url="http://127.0.0.1:9", model_calls="gateway",
)
set_agent_deps(build_deps(settings))
message = {{
    "message": "hi", "session_key": "chat-1", "channel": "test",
    "sender": {{"id": "u1", "name": "Ana"}}, "destination": {{"chat_id": "chat-1"}},
}}
publish({{"name": MESSAGE_RECEIVED, "data": message}}, runtime=runtime)
drain(runtime)  # no gateway serves this runtime: the turn parks on its model call
parked = [
    json.loads(runtime.redis.hget(key, "request"))
    for key in runtime.redis.scan_iter(f"{{runtime.keys.prefix}}:call:*")
]
Path("parked.json").write_text(json.dumps(parked))
"""


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_worker_on_the_gateway_path_renders_its_model_call_without_an_sdk(
    provider: str, tmp_path: Path
) -> None:
    # Given a fresh interpreter with the agent's dependencies built for MODEL_CALLS=gateway
    # When a message's turn runs up to its model call, which parks for the gateway
    loaded = loaded_after(GATEWAY_TURN.format(provider=provider), ("anthropic", "openai"), tmp_path)
    # Then the call was parked with the request rendered for the provider's wire API
    parked = json.loads((tmp_path / "parked.json").read_text())
    assert len(parked) == 1, f"expected one parked model call, found {len(parked)}"
    assert parked[0]["provider"] == provider and parked[0]["wire"], parked[0]
    # ... and neither model SDK was imported to render it
    assert loaded == [], f"a worker rendering a {provider} call imported {loaded}"
