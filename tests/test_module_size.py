"""No module of `harness` or `channels` grows past 450 lines.

A module that passes ~400 lines is split by what each part decides (docs/architecture.md's
layout table names the parts); this test is the limit that makes the split happen.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "channels")
MAX_LINES = 450

# Modules allowed over the limit for now, each with the reason; none today.
ALLOWED: frozenset[str] = frozenset()


def _lengths() -> dict[str, int]:
    """Lines in every Python module of the packages, by path relative to the repository."""
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _too_long(lengths: dict[str, int]) -> list[str]:
    """`path: N lines` for each module over the limit that is not allowed to be, longest first."""
    over = [(n, path) for path, n in lengths.items() if n > MAX_LINES and path not in ALLOWED]
    return [f"{path}: {n} lines" for n, path in sorted(over, reverse=True)]


def test_module_size_no_module_is_over_the_limit() -> None:
    # Given every module of harness and channels
    lengths = _lengths()
    # When those over the limit are listed
    offenders = _too_long(lengths)
    # Then there are none
    assert not offenders, (
        f"modules over {MAX_LINES} lines (split each by what its parts decide): "
        + "; ".join(offenders)
    )


def test_module_size_names_each_offender_and_its_length() -> None:
    # Given two modules over the limit and one at it
    lengths = {"harness/big.py": 451, "harness/ok.py": 450, "harness/huge.py": 900}
    # When those over the limit are listed
    offenders = _too_long(lengths)
    # Then both are named with their lengths, longest first
    assert offenders == ["harness/huge.py: 900 lines", "harness/big.py: 451 lines"]


def test_module_size_allowances_name_existing_modules() -> None:
    # Given the modules allowed over the limit for now
    lengths = _lengths()
    # When each is looked up in the tree
    missing = sorted(path for path in ALLOWED if path not in lengths)
    # Then each still exists (a stale allowance would hide nothing and should go)
    assert not missing, f"allowed over the limit but not in the tree: {missing}"
