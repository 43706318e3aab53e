"""The Helm chart: rendered and linted by Helm's own code (`helm-python-sdk`, the dev extra),
and its render validated against the Kubernetes schemas (`kubernetes-validate`, strict).

`deploy/helm/example-render.yaml` is validated always; where `helm_python` is installed the
test also checks that it is exactly what the chart renders now, and validates a render with
the default values.
"""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy import helm_render, mentions

# The chart's floor (Chart.yaml kubeVersion) and the newest schema the library ships.
VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
# Custom resources: no schema in kubernetes-validate; `_check_keda` checks them.
CUSTOM = {"keda.sh/v1alpha1"}


def _validate(objects: list[dict[str, Any]]) -> list[str]:
    problems = []
    for obj in objects:
        if obj["apiVersion"] in CUSTOM:
            continue
        for version in VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                where = ".".join(map(str, exc.path))
                problems.append(
                    f"{obj['kind']}/{obj['metadata']['name']} ({version}) {where}: {exc.message}"
                )
    return problems


def _check_keda(objects: list[dict[str, Any]]) -> None:
    by_kind = {o["kind"]: o for o in objects if o["apiVersion"] in CUSTOM}
    scaled, auth = by_kind["ScaledObject"], by_kind["TriggerAuthentication"]
    deployments = {o["metadata"]["name"] for o in objects if o["kind"] == "Deployment"}
    assert scaled["spec"]["scaleTargetRef"]["name"] in deployments
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "redis"
    assert set(trigger["metadata"]) >= {"address", "listName", "listLength"}
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    assert auth["spec"]["secretTargetRef"][0]["parameter"] == "password"


def test_the_example_render_is_valid_kubernetes() -> None:
    objects = mentions.rendered_chart()
    problems = _validate(objects)
    assert not problems, "\n".join(problems)
    _check_keda(objects)


def test_the_validation_refuses_an_unknown_field() -> None:
    # Given a Deployment of the render with a misspelt field
    deployment = next(o for o in mentions.rendered_chart() if o["kind"] == "Deployment")
    deployment["spec"]["replica"] = 2
    # Then the strict schema check reports it
    assert _validate([deployment])


def test_the_example_has_every_part_the_chart_offers() -> None:
    objects = mentions.rendered_chart()
    kinds = sorted(o["kind"] for o in objects)
    assert kinds.count("Deployment") == 4
    assert {"Service", "Ingress", "Secret", "ConfigMap", "PersistentVolumeClaim"} <= set(kinds)
    claim = next(o for o in objects if o["kind"] == "PersistentVolumeClaim")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    sidecar = next(
        o
        for o in objects
        if o["metadata"]["name"].endswith("-sidecar") and o["kind"] == "Deployment"
    )
    assert sidecar["spec"]["replicas"] == 1
    assert sidecar["spec"]["strategy"]["type"] == "Recreate"
    web = next(
        o for o in objects if o["metadata"]["name"].endswith("-web") and o["kind"] == "Deployment"
    )
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_every_pod_runs_as_non_root_without_privilege() -> None:
    for obj in mentions.rendered_chart():
        if obj["kind"] != "Deployment":
            continue
        pod = obj["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["automountServiceAccountToken"] is False
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert not context.get("privileged", False)


def test_the_example_is_what_the_chart_renders() -> None:
    pytest.importorskip("helm_python", reason="helm-python-sdk (the dev extra) renders the chart")
    expected = helm_render.render(helm_render.EXAMPLE_VALUES)
    assert helm_render.EXAMPLE.read_text(encoding="utf-8") == expected, (
        "deploy/helm/example-render.yaml is stale: "
        "python -m tests.deploy.helm_render > deploy/helm/example-render.yaml"
    )


def test_the_default_values_render_valid_kubernetes() -> None:
    pytest.importorskip("helm_python", reason="helm-python-sdk (the dev extra) renders the chart")
    objects = [o for o in yaml.safe_load_all(helm_render.render()) if o]
    kinds = {o["kind"] for o in objects}
    assert "Ingress" not in kinds and "ScaledObject" not in kinds  # off by default
    problems = _validate(objects)
    assert not problems, "\n".join(problems)


def test_helm_lint_is_clean() -> None:
    pytest.importorskip("helm_python", reason="helm-python-sdk (the dev extra) lints the chart")
    assert helm_render.lint_errors() == []
