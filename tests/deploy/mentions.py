"""What the deployment files name: the `harness` command lines they run, the environment
variables they set, the URLs they probe. Read from the files as an operator's tools would
(YAML, the systemd unit format, Dockerfile instructions), so the tests can check each name
against the code.

A `CommandLine` is the argument vector after `harness`; `where` says which file and object
named it, for failure messages.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.helm_render import EXAMPLE, ROOT

DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
COMPOSE_BWRAP = DEPLOY / "compose.bwrap.yaml"
SYSTEMD = DEPLOY / "systemd"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

# Services of compose.yaml that run the harness image (redis runs Redis's own).
COMPOSE_HARNESS_SERVICES = ("web", "worker", "scheduler", "sidecar")


@dataclass(frozen=True)
class CommandLine:
    """`harness <argv...>` as a deployment file runs it."""

    argv: tuple[str, ...]
    where: str


@dataclass(frozen=True)
class Variable:
    """An environment variable a deployment file sets (or, for compose, interpolates)."""

    name: str
    where: str


@dataclass(frozen=True)
class ProbeUrl:
    """An HTTP path a probe asks the web server for, on `port`."""

    path: str
    port: int
    where: str


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction, continuation lines joined."""

    keyword: str
    arguments: str
    line: int


def load_yaml_stream(path: Path) -> list[dict[str, Any]]:
    """Every non-empty document of a YAML file (safe loader)."""
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def compose() -> dict[str, Any]:
    """deploy/compose.yaml, parsed (anchors and merge keys resolved)."""
    return load_yaml_stream(COMPOSE)[0]


def rendered_chart() -> list[dict[str, Any]]:
    """The objects of deploy/helm/example-render.yaml."""
    return load_yaml_stream(EXAMPLE)


def units() -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Each systemd file under deploy/systemd as section -> [(key, value)]; keys repeat
    (`Environment=`), so this is a list, not a mapping."""
    parsed: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for path in sorted(SYSTEMD.glob("*.service")) + sorted(SYSTEMD.glob("*.target")):
        sections: dict[str, list[tuple[str, str]]] = {}
        current: list[tuple[str, str]] | None = None
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], [])
                continue
            key, sep, value = line.partition("=")
            if current is None or not sep:
                raise ValueError(f"{path.name}: not a unit line: {raw!r}")
            current.append((key.strip(), value.strip()))
        parsed[path.name] = sections
    return parsed


def dockerfile() -> list[Instruction]:
    """The Dockerfile's instructions in order (comments dropped, `\\` continuations joined)."""
    instructions: list[Instruction] = []
    pending = ""
    start = 0
    for number, raw in enumerate(DOCKERFILE.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = pending + line
        pending = ""
        keyword, _, arguments = text.partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
    return instructions


def exec_form(arguments: str) -> list[str]:
    """A Dockerfile ENTRYPOINT/CMD argument: the JSON (exec) form, else shell words."""
    if arguments.startswith("["):
        value = json.loads(arguments)
        return [str(item) for item in value]
    return shlex.split(arguments)


def _after_harness(argv: list[str]) -> tuple[str, ...] | None:
    """The arguments after the `harness` program in `argv`, or None if it runs no harness."""
    for index, word in enumerate(argv):
        if Path(word).name == "harness":
            return tuple(argv[index + 1 :])
    return None


def command_lines() -> Iterator[CommandLine]:
    """Every `harness ...` command line the deployment files run."""
    spec = compose()
    for name in COMPOSE_HARNESS_SERVICES:
        service = spec["services"][name]
        yield CommandLine(tuple(service["command"]), f"compose.yaml services.{name}.command")
        test = service.get("healthcheck", {}).get("test", [])
        argv = _after_harness(list(test[1:]))
        if argv is not None:
            yield CommandLine(argv, f"compose.yaml services.{name}.healthcheck")
    for obj in rendered_chart():
        for container in _containers(obj):
            where = f"helm {obj['kind']}/{obj['metadata']['name']}"
            yield CommandLine(tuple(container.get("args", [])), f"{where} args")
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                exec_ = container.get(probe, {}).get("exec")
                if exec_:
                    argv = _after_harness(exec_["command"])
                    if argv is not None:
                        yield CommandLine(argv, f"{where} {probe}")
    for unit, sections in units().items():
        for key, value in sections.get("Service", []):
            if key == "ExecStart":
                argv = _after_harness(shlex.split(value))
                if argv is not None:
                    yield CommandLine(argv, f"systemd {unit}")
    cmd = [i for i in dockerfile() if i.keyword == "CMD"][-1]
    yield CommandLine(tuple(exec_form(cmd.arguments)), f"Dockerfile CMD (line {cmd.line})")


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj.get("kind") != "Deployment":
        return []
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers


_INTERPOLATED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def variables() -> Iterator[Variable]:
    """Every environment variable a harness process is given by the deployment files."""
    for path in (COMPOSE, COMPOSE_BWRAP):
        spec = load_yaml_stream(path)[0]
        for name, service in spec["services"].items():
            if name in COMPOSE_HARNESS_SERVICES:
                for key in service.get("environment", {}):
                    yield Variable(key, f"{path.name} services.{name}.environment")
    for obj in rendered_chart():
        if obj["kind"] == "ConfigMap":
            for key in obj["data"]:
                yield Variable(key, f"helm ConfigMap/{obj['metadata']['name']}")
        if obj["kind"] == "Secret":
            for key in obj.get("stringData") or {}:
                yield Variable(key, f"helm Secret/{obj['metadata']['name']}")
    for unit, sections in units().items():
        for key, value in sections.get("Service", []):
            if key == "Environment":
                yield Variable(value.partition("=")[0], f"systemd {unit}")
    for line in (SYSTEMD / "harness.env.example").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield Variable(line.partition("=")[0].strip(), "systemd harness.env.example")
    for instruction in dockerfile():
        if instruction.keyword == "ENV":
            for word in shlex.split(instruction.arguments):
                yield Variable(word.partition("=")[0], f"Dockerfile ENV (line {instruction.line})")


def interpolated() -> set[str]:
    """The `${NAME}` variables compose.yaml reads from the operator's environment or .env."""
    return set(_INTERPOLATED.findall(COMPOSE.read_text(encoding="utf-8")))


_URL = re.compile(r"http://127\.0\.0\.1:(\d+)(/[A-Za-z0-9_/-]*)")


def probe_urls() -> Iterator[ProbeUrl]:
    """Every HTTP path a probe or healthcheck of the deployment files asks the web server for."""
    web = compose()["services"]["web"]
    for port, path in _URL.findall(" ".join(web["healthcheck"]["test"])):
        yield ProbeUrl(path, int(port), "compose.yaml services.web.healthcheck")
    for obj in rendered_chart():
        for container in _containers(obj):
            ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                http = container.get(probe, {}).get("httpGet")
                if http:
                    port = ports.get(http["port"], http["port"])
                    where = f"helm Deployment/{obj['metadata']['name']} {probe}"
                    yield ProbeUrl(http["path"], int(port), where)
