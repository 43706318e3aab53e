"""The systemd units: one per process (a template for workers), each with its environment
file, a restart policy and a stop that gives the SIGTERM hand-back the same time as Compose's
`stop_grace_period` and the chart's `terminationGracePeriodSeconds`."""

from __future__ import annotations

import pytest

from tests.deploy import mentions

UNITS = {
    "web": "harness-web.service",
    "worker": "harness-worker@.service",
    "scheduler": "harness-scheduler.service",
    "sidecar": "harness-sidecar.service",
}


@pytest.mark.parametrize("process", sorted(UNITS))
def test_each_unit_reads_its_env_restarts_and_stops_like_the_other_deployments(
    process: str,
) -> None:
    # Given the process's unit, its Compose service and its Deployment
    service = dict(mentions.units()[UNITS[process]]["Service"])
    compose_grace = mentions.compose()["services"][process]["stop_grace_period"]
    deployment = next(
        o
        for o in mentions.rendered_chart()
        if o["kind"] == "Deployment" and o["metadata"]["name"].endswith(f"-{process}")
    )
    helm_grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # Then it reads the operator's file, restarts, stops with SIGTERM, and waits as long
    assert service["EnvironmentFile"] == "/etc/harness/harness.env"
    assert service["Restart"] in ("always", "on-failure")
    assert service["KillSignal"] == "SIGTERM"
    assert f"{service['TimeoutStopSec']}s" == compose_grace
    assert int(service["TimeoutStopSec"]) == helm_grace
    assert service["User"] == "harness"


def test_the_target_starts_every_process() -> None:
    wants = dict(mentions.units()["harness.target"]["Unit"])["Wants"].split()
    for unit in UNITS.values():
        prefix = unit.replace("@.service", "@")
        assert any(w == unit or w.startswith(prefix) for w in wants), unit
