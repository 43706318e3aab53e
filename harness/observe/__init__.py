"""Seeing runs: step details with cost, usage reports, run filters, rerun, logs and traces."""
