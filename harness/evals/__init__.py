"""`harness eval`: suites of cases run against the configured model through the agent's real
turn, graded, and reported (see docs/evals.md)."""
