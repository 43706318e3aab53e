"""Rendering the Helm chart with Helm itself, offline: `helm-python-sdk` (import name
`helm_python`) binds Helm's Go SDK in a shared library, so no `helm` binary is needed.

`deploy/helm/example-render.yaml` is the chart rendered with every option on
(`EXAMPLE_VALUES`); tests validate that file against the Kubernetes schemas, and, where
`helm_python` is installed (the dev extra), check that it is what the chart renders today.
Regenerate it with `python -m tests.deploy.helm_render > deploy/helm/example-render.yaml`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "harness"
EXAMPLE = ROOT / "deploy" / "helm" / "example-render.yaml"

# Every optional part on, so the example shows (and the schema check sees) all of them.
EXAMPLE_VALUES: dict[str, Any] = {
    "ingress": {"enabled": True, "className": "nginx", "host": "harness.example.com"},
    "autoscaling": {"keda": {"enabled": True}},
    "sandbox": {"bubblewrap": True},
    "secretEnv": {
        "REDIS_URL": "redis://:example-password@redis:6379/0",
        "REDIS_PASSWORD": "example-password",
        "HARNESS_API_KEY": "example-api-key",
    },
}

HEADER = (
    "# The chart rendered by Helm with tests/deploy/helm_render.py's EXAMPLE_VALUES (release\n"
    "# `demo`, namespace `harness`). Generated: python -m tests.deploy.helm_render\n"
)


def render(values: dict[str, Any] | None = None) -> str:
    """The chart's manifests as one YAML stream, templates in name order, each headed by its
    `# Source:` line like `helm template`. Raises ImportError without `helm_python`, and
    Helm's own error when a template fails."""
    from helm_python.chart import Chart  # the dev extra's; the caller skips without it

    manifests = Chart.load(CHART).render(values, name="demo", namespace="harness")
    parts = [
        f"---\n# Source: {name}\n{body.strip()}\n"
        for name, body in sorted(manifests.items())
        if body.strip()
    ]
    return HEADER + "".join(parts)


def lint_errors() -> list[str]:
    """What `helm lint --strict` reports as warnings or errors (info lines left out)."""
    from helm_python.chart import lint

    report = lint(CHART, EXAMPLE_VALUES, strict=True)
    messages = [m["error"] for m in report["messages"] if m["severity"] >= 2]
    return [*messages, *report["errors"]]


if __name__ == "__main__":
    sys.stdout.write(render(EXAMPLE_VALUES))
