"""What a run adds up to, and how it is shown: the summary, the HTML page, the command's
no-key skip and `--compare`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.evals.html import render_html
from harness.evals.results import Attempt, Grade, Transcript
from harness.evals.summary import build_report, percentile
from harness.observe.usage_report import UsageTotal
from harness.settings import get_settings


def _attempt(case: str, passed: bool, latency: float, **tokens: int) -> Attempt:
    return Attempt(
        suite="core",
        case=case,
        transcript=Transcript(
            answer="<script>alert(1)</script>",
            latency_s=latency,
            usage=UsageTotal(group="case", **tokens),
        ),
        grades=[
            Grade(grader="answer.contains", passed=passed, detail="" if passed else "missing 'x'")
        ],
    )


def test_percentile_is_nearest_rank() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0
    assert percentile([float(n) for n in range(1, 21)], 0.95) == 19.0
    assert percentile([], 0.5) == 0.0


def test_summary_counts_pass_rate_cache_hits_and_failures() -> None:
    # Given a case that passed once and failed once, reading half its input from the cache
    attempts = [
        _attempt("a", True, 1.0, input_tokens=50, cache_read_tokens=50),
        _attempt("a", False, 3.0, input_tokens=100),
    ]
    # When they are summed
    summary = build_report("m", "t", 2, attempts).cases[0]
    # Then the rate, latency, cache hit rate and the failure are there
    assert (summary.runs, summary.passed, summary.pass_rate) == (2, 1, 0.5)
    assert (summary.latency_p50_s, summary.latency_p95_s) == (1.0, 3.0)
    assert summary.cache_hit_rate == pytest.approx(50 / 200)
    assert summary.failures == ["answer.contains: missing 'x'"]


def test_html_report_is_self_contained_and_escapes_answers() -> None:
    page = render_html(build_report("m", "t", 1, [_attempt("a", True, 1.0)]))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "src=" not in page and "href=" not in page


def test_eval_without_a_model_key_skips_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given no model key nor base URL in the environment
    monkeypatch.chdir(tmp_path)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    get_settings.cache_clear()
    # When `harness eval` runs
    result = CliRunner().invoke(app, ["eval"])
    get_settings.cache_clear()
    # Then it prints one line and exits 0
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines() == [result.output.strip()]
    assert result.output.startswith("skipped: no model key")


def test_compare_shows_both_reports_and_the_change(tmp_path: Path) -> None:
    # Given two reports where case "a" went from failing to passing
    before, after = tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(build_report("old", "t1", 1, [_attempt("a", False, 1.0)]).model_dump_json())
    after.write_text(build_report("new", "t2", 1, [_attempt("a", True, 2.0)]).model_dump_json())
    # When they are compared
    result = CliRunner().invoke(app, ["eval", "--compare", str(before), str(after)])
    # Then the table shows both rates and the change
    assert result.exit_code == 0, result.output
    assert "core/a" in result.output and "+100 pts" in result.output
