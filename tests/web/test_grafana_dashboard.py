"""`deploy/grafana/harness.json` charts only metrics that `/metrics` serves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "harness.json"
MODEL_ANSWER = {"model": "claude-sonnet-5", "usage": {"input_tokens": 5, "output_tokens": 2}}


def _exprs(node: Any) -> list[str]:
    """Every `expr` and templating `query` string anywhere in the dashboard."""
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k in ("expr", "query") and isinstance(v, str)]
        return found + [e for v in node.values() for e in _exprs(v)]
    if isinstance(node, list):
        return [e for v in node for e in _exprs(v)]
    return []


def test_every_metric_the_dashboard_charts_is_served(
    client: TestClient, runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a fleet that ran a model step, so every family has samples
    @function(id="thinker", trigger=event("app/go"), registry=registry)
    def thinker(ctx: Context) -> None:
        ctx.step.run("think", lambda: MODEL_ANSWER)

    runtime.register_functions()
    publish({"name": "app/go"}, runtime=runtime)
    drain(runtime)
    served = {
        sample.name
        for family in text_string_to_metric_families(client.get("/metrics").text)
        for sample in family.samples
    }
    # When the dashboard's queries are read
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = _exprs(dashboard["panels"]) + _exprs(dashboard["templating"])
    named = {name for expr in exprs for name in re.findall(r"\bharness_[a-z_]+", expr)}
    # Then it charts something, and every metric it names is served
    assert len(dashboard["panels"]) >= 10
    assert named, "the dashboard names no harness metric"
    assert named <= served, f"charted but not served: {sorted(named - served)}"
