"""What a run adds up to: per case, the pass rate over its repeats, latency p50/p95, tokens,
cost and cache hit rate; the same over the whole run. `Report` is the JSON report."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, Field

from harness.evals.results import Attempt


class CaseSummary(BaseModel, frozen=True):
    """One case over its repeats. `cache_hit_rate` is cache-read input tokens over all input
    tokens (None when no input was counted); `cost_usd` None when a model has no price."""

    suite: str
    case: str
    runs: int
    passed: int
    pass_rate: float
    latency_p50_s: float
    latency_p95_s: float
    input_tokens: int
    output_tokens: int
    cache_hit_rate: float | None
    cost_usd: float | None
    failures: list[str] = Field(default_factory=list)


class Report(BaseModel):
    """A whole `harness eval` run: what ran, with what, and every attempt kept."""

    model: str
    started: str
    repeat: int
    cases: list[CaseSummary]
    total: CaseSummary
    attempts: list[Attempt]


def percentile(values: Sequence[float], q: float) -> float:
    """The `q` (0..1) percentile by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(suite: str, case: str, attempts: Sequence[Attempt]) -> CaseSummary:
    """The summary of `attempts` (those of one case, or of the whole run)."""
    ts = [a.transcript.usage for a in attempts]
    latencies = [a.transcript.latency_s for a in attempts]
    fed = sum(t.input_tokens + t.cache_read_tokens + t.cache_write_tokens for t in ts)
    cost: float | None = 0.0
    for t in ts:
        cost = None if t.cost_usd is None or cost is None else cost + t.cost_usd
    passed = sum(a.passed for a in attempts)
    failures = sorted(
        {a.error or "" for a in attempts if a.error}
        | {f"{g.grader}: {g.detail}" for a in attempts for g in a.grades if not g.passed}
    )
    return CaseSummary(
        suite=suite,
        case=case,
        runs=len(attempts),
        passed=passed,
        pass_rate=passed / len(attempts) if attempts else 0.0,
        latency_p50_s=percentile(latencies, 0.5),
        latency_p95_s=percentile(latencies, 0.95),
        input_tokens=sum(t.input_tokens for t in ts),
        output_tokens=sum(t.output_tokens for t in ts),
        cache_hit_rate=sum(t.cache_read_tokens for t in ts) / fed if fed else None,
        cost_usd=cost,
        failures=failures,
    )


def build_report(model: str, started: str, repeat: int, attempts: list[Attempt]) -> Report:
    """The report of `attempts`, cases in the order they first appear."""
    keys = list(dict.fromkeys((a.suite, a.case) for a in attempts))
    cases = [summarize(s, c, [a for a in attempts if (a.suite, a.case) == (s, c)]) for s, c in keys]
    total = summarize("all", "all", attempts)
    return Report(
        model=model, started=started, repeat=repeat, cases=cases, total=total, attempts=attempts
    )
