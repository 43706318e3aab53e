"""`/dashboard/charts`: runs, failures, p95 turn latency, tokens and cost over time, as
server-drawn SVG bar charts (`svg.bar_chart`) of `harness.observe.trends`."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse

from harness.commands.runs import duration
from harness.observe.trends import SPANS, Span, Trends, trends
from harness.web.dashboard import pages, render
from harness.web.dashboard.svg import Bar, bar_chart
from harness.web.deps import WebContext, web_context

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
"""Mounted under `/dashboard` by `routes.router`."""
Ctx = Annotated[WebContext, Depends(web_context)]


def charts_svg(data: Trends) -> dict[str, str]:
    """The five charts of `data`, by name: runs, failed, p95 (turn latency), tokens, cost."""
    b, u = data.buckets, data.usage
    cost = [0.0 if t.cost_usd is None else t.cost_usd for t in u]
    return {
        "runs": bar_chart("chart-runs", "Runs started", [
            Bar(x.label, x.runs, f"{x.runs} runs") for x in b]),
        "failed": bar_chart("chart-failed", "Runs failed", [
            Bar(x.label, x.failed, f"{x.failed} failed") for x in b]),
        "p95": bar_chart("chart-p95", "p95 turn latency", [
            Bar(x.label, (x.p95_turn_ms or 0) / 1000,
                "no turns" if x.p95_turn_ms is None else duration(x.p95_turn_ms)) for x in b
        ], unit="s"),
        "tokens": bar_chart("chart-tokens", "Tokens per day", [
            Bar(t.group, t.input_tokens + t.output_tokens,
                f"{t.input_tokens + t.output_tokens} tokens") for t in u]),
        "cost": bar_chart("chart-cost", "Cost per day (list price)", [
            Bar(t.group, c, "unknown" if t.cost_usd is None else f"${c:.4f}")
            for t, c in zip(u, cost, strict=True)
        ], unit="$"),
    }  # fmt: skip


@router.get("/charts")
@pages.as_page
def charts_page(request: Request, context: Ctx, span: str = "24h") -> HTMLResponse:
    """The charts of the last 24 hours (hourly) or 14 days (daily: `?span=14d`); another
    span is a 400."""
    render.require(request, context)
    if span not in SPANS:
        raise HTTPException(400, f"span: one of {', '.join(SPANS)}")
    chosen: Span = "24h" if span == "24h" else "14d"
    data = trends(context.runtime_factory(), chosen)
    return pages.page(request, context, "charts.html", data=data, charts=charts_svg(data),
                      spans=list(SPANS))  # fmt: skip
