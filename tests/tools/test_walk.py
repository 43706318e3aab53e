from __future__ import annotations

from pathlib import Path

import pytest

from harness.tools.walk import compile_glob, walk


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/pkg/a.py", True),
        ("**/*.py", "src/a.pyc", False),
        ("*.py", "src/pkg/a.py", True),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/pkg/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "lib/src/a.py", False),
        ("*.{ts,tsx}", "ui/app.tsx", True),
        ("*.{ts,tsx}", "ui/app.js", False),
        ("test_?.py", "test_1.py", True),
        ("[!a]*.txt", "a.txt", False),
        ("[!a]*.txt", "b.txt", True),
        ("./docs/**", "docs/guide/intro.md", True),
    ],
)
def test_compile_glob_matches_like_a_shell_glob(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern)(path) is expected, f"{pattern!r} on {path!r}"


def test_walk_lists_sorted_entries_and_skips_git(tmp_path: Path) -> None:
    for path in ("b/x.txt", "a.txt", ".git/HEAD", ".env"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")

    entries = [(e.relative, e.is_dir) for e in walk(tmp_path, tmp_path)]

    assert entries == [(".env", False), ("a.txt", False), ("b", True), ("b/x.txt", False)]
