"""A network declared in Python (`@network` in a file of `functions/`): the declaration's way
from the file to the fleet, its checks on each side, and a run with pydantic-typed state.

The file is loaded by the sidecar's real loader and its report admitted by the executor's
real admission, then registered the way the executor registers it; the router function runs
in this process (`drain`), as the sidecar's host would run it (tests/integration covers the
real host)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from harness.agent.networks.declare import NETWORK_KIND, router_id
from harness.agent.networks.declared import MAX_DECLARATION_CHARS
from harness.agent.networks.load import workspace_networks
from harness.cli import app
from harness.runtime import Runtime
from harness.runtime.assembly import set_runtime
from harness.runtime.function_sources import (
    FILE_SOURCE,
    Declaration,
    LoadError,
    Origin,
    declarations,
    replace_source,
)
from harness.runtime.functions import FunctionRegistry
from harness.sidecar.admission import Admitted, admit
from harness.sidecar.loader import load_folder
from harness.sidecar.wire import Loaded
from tests.agent.networks.conftest import NetworkRig
from tests.fakes.model_server import Reply

NIGHTLY = """
from pydantic import BaseModel

from harness.agent.api import network


class Nightly(BaseModel):
    findings: list[str] = []
    summary: str | None = None


@network(name="nightly", agents=["researcher", "writer"], state=Nightly, max_iterations=6,
         description="Researches, then writes the summary.")
def route(state, last, iteration):
    if not isinstance(state, Nightly):
        return None, f"the router got a {type(state).__name__}, not a Nightly"
    if not state.findings:
        return "researcher", f"no findings at iteration {iteration}"
    if state.summary is None:
        return "writer", f"findings, no summary; {last['agent']} ran last"
    return None, f"done after {iteration} agents"
"""
ROUTE_LINE = 12
"""The line of `@network` in NIGHTLY (a decorated function's first line)."""


class Nightly(BaseModel):  # the file's state model, as the test knows it (no docstring)
    findings: list[str] = []
    summary: str | None = None


def _write(network: NetworkRig, name: str, source: str) -> Path:
    folder = network.agent.workspace / "functions"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(source))
    return folder


def _register(network: NetworkRig, registry: FunctionRegistry, folder: Path) -> Admitted:
    """Load `folder` and register what the executor admits, as the executor does; the
    functions run in this process."""
    loaded = load_folder(folder)
    report = Loaded(
        report=loaded.report, specs=[fn.spec for fn in loaded.functions], files=loaded.files,
        declarations=loaded.declarations,
    )  # fmt: skip
    admitted = admit(report, reserved=set())
    runtime = network.agent.runtime
    specs = {}
    for fn in loaded.functions:
        if fn.spec in admitted.specs:
            registry.register(fn)
            specs[fn.id] = (fn.spec, Origin(source=FILE_SOURCE, file=admitted.files[fn.id]))
    runtime.register_functions()
    replace_source(runtime, FILE_SOURCE, specs, admitted.errors, admitted.declarations)
    return admitted


def _errors(admitted: Admitted) -> list[tuple[str, int, str]]:
    return [(e.file, e.line, str(e.error)) for e in admitted.errors]


def test_declared_network_reaches_the_fleet_with_its_models_schema(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given a functions/ file declaring a network with a pydantic state, and its agents
    network.declare_agent("researcher")
    network.declare_agent("writer")
    folder = _write(network, "nightly.py", NIGHTLY)

    # When the sidecar loads and registers it
    admitted = _register(network, registry, folder)

    # Then the fleet loads it like a network file: a function router (its own), the model's
    # JSON Schema as the state's, the place it was declared
    assert _errors(admitted) == []
    loaded = workspace_networks(network.agent.workspace, network.agent.runtime)
    spec = loaded.get("nightly")
    assert spec is not None, loaded.errors
    assert spec.agents == ("researcher", "writer") and spec.max_iterations == 6
    assert spec.router.kind == "function" and spec.router.id == router_id("nightly")
    assert spec.state == Nightly.model_json_schema()
    assert spec.path == "functions/nightly.py"
    stored = declarations(network.agent.runtime, FILE_SOURCE, NETWORK_KIND)
    assert [(d.file, d.line) for d in stored] == [("nightly.py", ROUTE_LINE)]


def test_declared_network_runs_with_typed_state_and_refuses_a_write_the_model_breaks(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given the declared network, a researcher that sets findings and a writer that first
    # sets the summary to a number (the model says str | None), then to a text
    network.declare_agent("researcher")
    network.declare_agent("writer")
    _register(network, registry, _write(network, "nightly.py", NIGHTLY))
    network.agent.model.script(
        Reply.tool("state_set", {"key": "findings", "value": ["tea is old"]}),
        Reply.answer("Found."),
        Reply.tool("state_set", {"key": "summary", "value": 42}),
        Reply.tool("state_set", {"key": "summary", "value": "Tea is old."}),
        Reply.answer("Written."),
    )

    # When the network runs
    run_id = network.start("nightly", "Summarise the night")

    # Then the router (given a Nightly each time) ran the researcher, then the writer, then
    # stopped; the state after each agent is checked by the model's schema
    decisions = network.steps(run_id, "route")
    assert [d["next"] for d in decisions] == ["researcher", "writer", None], decisions
    assert decisions[0]["reason"] == f"{router_id('nightly')}: no findings at iteration 0"
    assert "researcher ran last" in decisions[1]["reason"], decisions
    assert network.states(run_id) == [
        {"findings": ["tea is old"]},
        {"findings": ["tea is old"], "summary": "Tea is old."},
    ]
    # and the write the model's schema refuses was refused, the state unchanged by it
    refused = network.agent.model.requests[3].body["messages"][-1]["content"][0]
    assert refused.get("is_error") is True and "refused" in str(refused["content"]), refused
    assert network.agent.replies() == ["Written."]


def test_declared_network_refuses_a_starting_state_its_model_breaks(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given the declared network
    network.declare_agent("researcher")
    network.declare_agent("writer")
    _register(network, registry, _write(network, "nightly.py", NIGHTLY))

    # When it is started from a state its model's schema refuses
    run_id = network.start("nightly", "Go", state={"findings": "not a list"})

    # Then no agent runs and the answer says the state does not fit
    out = network.record(run_id).result
    assert out["iterations"] == 0
    assert "does not fit" in out["answer"] and "findings" in out["answer"], out


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from pydantic import BaseModel\nfrom harness.agent.api import network\n"
            "class S(BaseModel):\n    summary: str\n"
            "@network(name='n1', agents=['researcher'], state=S, description='x')\n"
            "def route(state, last, iteration):\n    return None\n",
            "every field needs a default (the state starts empty and fills in); no default: "
            "summary",
        ),
        (
            "from harness.agent.api import network\n"
            "@network(name='n2', agents=['stop'], description='x')\n"
            "def route(state, last, iteration):\n    return None\n",
            "'stop' is a router word",
        ),
        (
            "from harness.agent.api import network\n"
            "@network(name='n3', agents=['researcher'], description='x', max_iterations=500)\n"
            "def route(state, last, iteration):\n    return None\n",
            "max_iterations",
        ),
    ],
    ids=["required-field", "reserved-agent", "too-many-iterations"],
)
def test_bad_declaration_fails_its_file_with_a_clear_error(
    network: NetworkRig, registry: FunctionRegistry, source: str, expected: str
) -> None:
    # Given a file declaring a network that breaks a network's rules
    admitted = _register(network, registry, _write(network, "bad.py", source))

    # Then the file fails to load, saying why, and nothing of it is registered
    assert len(admitted.errors) == 1 and admitted.errors[0].file == "bad.py"
    assert expected in str(admitted.errors[0].error), admitted.errors
    assert admitted.declarations == []
    assert [f for f in admitted.files.values() if f == "bad.py"] == []


def _declaration(name: str, file: str, **body: Any) -> Declaration:
    fields = {
        "name": name, "description": "x", "agents": ["researcher"],
        "router": {"kind": "function", "id": router_id(name)}, **body,
    }  # fmt: skip
    return Declaration(kind=NETWORK_KIND, file=file, line=3, body=fields)


def test_admission_refuses_declarations_a_lying_host_reports(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given a host that reports declarations its own load could not have made: another
    # function as router, a network file key the loader sets, a huge body, a name twice,
    # and a router that was never loaded
    loaded = load_folder(_write(network, "nightly.py", NIGHTLY))
    lies = [
        _declaration("nightly", "nightly.py", router={"kind": "function", "id": "agent-x"}),
        _declaration("nightly", "nightly.py", path="networks/evil.md"),
        _declaration("nightly", "nightly.py", instructions="x" * MAX_DECLARATION_CHARS),
        *loaded.declarations,
        *loaded.declarations,
        _declaration("other", "nightly.py"),
    ]
    report = Loaded(
        report=loaded.report, specs=[fn.spec for fn in loaded.functions], files=loaded.files,
        declarations=lies,
    )  # fmt: skip

    # When the executor admits the report
    admitted = admit(report, reserved=set())

    # Then only the honest declaration is kept; each other is a load error saying why
    assert admitted.declarations == loaded.declarations
    problems = [str(e.error) for e in admitted.errors]
    assert "its router must be its own function 'network-router-nightly'" in problems[0]
    assert "'path' is not set here" in problems[1]
    assert f"over {MAX_DECLARATION_CHARS}" in problems[2]
    first = f"functions/nightly.py:{ROUTE_LINE}"
    assert problems[3] == f"network 'nightly' is already declared at {first}"
    assert problems[4] == "network 'other': its router function was not loaded"


def test_declared_network_with_an_unknown_agent_or_a_files_name_is_an_error(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given a declared network whose writer has no AGENT.md, and one whose name a network
    # file also has
    network.declare_agent("researcher")
    network.declare_network(
        "twice", "---\ndescription: x\nagents: [researcher]\nrouter: {kind: agent}\n---\n"
    )
    twice = NIGHTLY.replace('"nightly"', '"twice"').replace('"writer"]', '"researcher"]')
    folder = _write(network, "nightly.py", NIGHTLY)
    _write(network, "twice.py", twice.replace('["researcher", "researcher"]', '["researcher"]'))
    _register(network, registry, folder)

    # When the fleet loads the workspace's networks
    loaded = workspace_networks(network.agent.workspace, network.agent.runtime)

    # Then neither loads, and the errors name the file and line (both places for the name)
    assert loaded.names() == []
    shown = sorted(str(e) for e in loaded.errors)
    assert shown == [
        f"functions/nightly.py:{ROUTE_LINE}: agents: no agent named 'writer'",
        f"functions/twice.py:{ROUTE_LINE}: network 'twice' is declared twice, neither loads: "
        "also networks/twice.md",
        "networks/twice.md:1: network 'twice' is declared twice, neither loads: also "
        f"functions/twice.py:{ROUTE_LINE}",
    ]


@pytest.mark.usefixtures("restore_settings")
def test_networks_command_lists_declared_networks_and_their_errors(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given a declared network whose agents exist, and one whose writer does not
    network.declare_agent("researcher")
    solo = NIGHTLY.replace('"nightly"', '"solo"').replace(', "writer"]', "]")
    _write(network, "solo.py", solo)
    _register(network, registry, _write(network, "nightly.py", NIGHTLY))
    runtime: Runtime = network.agent.runtime
    set_runtime(runtime)
    try:
        # When `harness networks --json` runs
        workspace = str(network.agent.workspace)
        result = CliRunner().invoke(app, ["--workspace", workspace, "networks", "--json"])
    finally:
        set_runtime(None)

    # Then the good one is listed with its function router and place, the other as an error
    # at its file and line, as a network file's would be
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [(n["name"], n["path"]) for n in shown["networks"]] == [("solo", "functions/solo.py")]
    assert shown["networks"][0]["router"] == {"kind": "function", "id": router_id("solo")}
    assert [(e["path"], e["line"]) for e in shown["errors"]] == [
        ("functions/nightly.py", ROUTE_LINE)
    ]
    assert shown["warnings"] == []


def test_replacing_the_source_replaces_its_declarations(network: NetworkRig) -> None:
    # Given a source that declared a network
    runtime = network.agent.runtime
    replace_source(runtime, FILE_SOURCE, {}, [], [_declaration("a", "a.py")])

    # When it registers again without it (the file was deleted)
    replace_source(runtime, FILE_SOURCE, {}, [LoadError(file="b.py", error="x")])

    # Then the declaration is gone with the rest of the old registration
    assert declarations(runtime, FILE_SOURCE, NETWORK_KIND) == []
