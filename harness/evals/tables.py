"""The terminal's view of reports: one row per case, and two reports side by side."""

from __future__ import annotations

from rich.table import Table

from harness.evals.summary import CaseSummary, Report

HEADERS = ("case", "pass", "p50 s", "p95 s", "tokens in/out", "cache hit", "cost")


def percent(value: float | None) -> str:
    """`42%`, or `-` for None."""
    return "-" if value is None else f"{value:.0%}"


def dollars(value: float | None) -> str:
    """`$0.0123`, or `unknown` for None (a model without a price)."""
    return "unknown" if value is None else f"${value:.4f}"


def row(summary: CaseSummary) -> list[str]:
    """A summary's cells, in `HEADERS` order."""
    return [
        summary.case if summary.suite == "all" else f"{summary.suite}/{summary.case}",
        f"{summary.passed}/{summary.runs} ({percent(summary.pass_rate)})",
        f"{summary.latency_p50_s:.1f}",
        f"{summary.latency_p95_s:.1f}",
        f"{summary.input_tokens}/{summary.output_tokens}",
        percent(summary.cache_hit_rate),
        dollars(summary.cost_usd),
    ]


def report_table(report: Report) -> Table:
    """Every case, then the total."""
    table = Table(title=f"harness eval: {report.model}", show_footer=False)
    for header in HEADERS:
        table.add_column(header)
    for summary in report.cases:
        table.add_row(*row(summary))
    table.add_section()
    table.add_row(*row(report.total))
    return table


def compare_table(a: Report, b: Report) -> Table:
    """Pass rate, p50 latency and cost of each case in `a` and `b`, with the change; cases in
    only one report show `-` on the other side."""
    table = Table(title=f"{a.model} ({a.started})  vs  {b.model} ({b.started})")
    for header in ("case", "pass A", "pass B", "change", "p50 A", "p50 B", "cost A", "cost B"):
        table.add_column(header)
    left = {(s.suite, s.case): s for s in a.cases}
    right = {(s.suite, s.case): s for s in b.cases}
    for key in list(dict.fromkeys([*left, *right])):
        x, y = left.get(key), right.get(key)
        change = "-" if x is None or y is None else f"{(y.pass_rate - x.pass_rate) * 100:+.0f} pts"
        table.add_row(
            f"{key[0]}/{key[1]}",
            percent(x.pass_rate) if x else "-",
            percent(y.pass_rate) if y else "-",
            change,
            f"{x.latency_p50_s:.1f}" if x else "-",
            f"{y.latency_p50_s:.1f}" if y else "-",
            dollars(x.cost_usd) if x else "-",
            dollars(y.cost_usd) if y else "-",
        )
    table.add_section()
    table.add_row(
        "all", percent(a.total.pass_rate), percent(b.total.pass_rate),
        f"{(b.total.pass_rate - a.total.pass_rate) * 100:+.0f} pts",
        f"{a.total.latency_p50_s:.1f}", f"{b.total.latency_p50_s:.1f}",
        dollars(a.total.cost_usd), dollars(b.total.cost_usd),
    )  # fmt: skip
    return table
