"""The one statistic the benchmarks share beyond `statistics`: a percentile of timings."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The value below which a fraction `q` (0 to 1) of `values` lies, by the nearest rank
    (no interpolation); `values` must not be empty."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
