"""The docs stay true to the tree: the architecture's layout table, links, README tables.

`docs/architecture.md`'s "Layout" table is the map a newcomer reads first, so every path it
names must exist and every module of `harness/` and `channels/` must be on it. A row's first
column names paths in backticks: a full path (`harness/web/`, `channels/base.py`), or a bare
file name that shares the folder of the path before it (`registry.py` after
`channels/base.py`); `<platform>` stands for each folder under `channels/` that holds a
`channel.py`. A folder covers every module below it. Backticked words that are not paths
(`SlackChannel`) are left alone.

Relative links in `README.md` and `docs/*.md` must resolve to a file or folder in the
repository (and to a heading, when they name one), a path written in backticks there
(`harness/runtime/bus.py`) must exist, and a Markdown table must not be cut by a blank line:
GitHub renders the rows after it as raw `|` text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = ("harness", "channels")
PLATFORM = "<platform>"


def _platforms() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "channels").glob("*/channel.py"))


def _layout_rows(text: str) -> list[str]:
    """The first column of each body row of the "## Layout" table."""
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [row.split("|")[1] for row in rows[2:]]  # after the header and its separator


def _named_paths(cell: str) -> list[str]:
    """The repository paths one first-column cell names, `<platform>` still in them."""
    paths: list[str] = []
    folder = ""
    for token in re.findall(r"`([^`]+)`", cell):
        if not (token.endswith(".py") or token.endswith("/")):
            continue  # a class or a word, not a path
        if "/" in token.rstrip("/"):
            path = token
        else:
            path = folder + token
        folder = path if path.endswith("/") else path.rsplit("/", 1)[0] + "/"
        paths.append(path)
    return paths


def _expanded(path: str) -> list[str]:
    if PLATFORM not in path:
        return [path]
    return [path.replace(PLATFORM, name) for name in _platforms()]


def _layout_paths() -> list[str]:
    cells = _layout_rows(ARCHITECTURE.read_text())
    return [p for cell in cells for named in _named_paths(cell) for p in _expanded(named)]


def _modules() -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name != "__init__.py"
    )


def test_layout_table_names_only_paths_that_exist() -> None:
    # Given the paths the layout table names
    named = _layout_paths()
    # When each is looked up in the tree
    missing = [path for path in named if not (ROOT / path).exists()]
    # Then every one exists
    assert named, "no paths found in docs/architecture.md's Layout table"
    assert not missing, f"the Layout table names paths that do not exist: {missing}"


def test_layout_table_covers_every_module() -> None:
    # Given the files and folders the layout table names
    named = set(_layout_paths())
    folders = tuple(path for path in named if path.endswith("/"))
    # When every module of harness/ and channels/ is looked for in it
    unnamed = [m for m in _modules() if m not in named and not m.startswith(folders)]
    # Then each is named by a row, itself or through its folder
    assert not unnamed, (
        f"modules missing from docs/architecture.md's Layout table (add a row, or name them "
        f"in one): {unnamed}"
    )


def test_named_paths_share_the_folder_of_the_path_before() -> None:
    # Given a cell naming a full path, two bare files, a word and a second folder's file
    cell = " `channels/drafts.py`, `draft_writer.py`, `SlackChannel` methods, `a/b/c.py`, `d.py` "
    # When its paths are read
    paths = _named_paths(cell)
    # Then bare names take the folder of the path before them, and words are skipped
    assert paths == ["channels/drafts.py", "channels/draft_writer.py", "a/b/c.py", "a/b/d.py"]


# -- links ---------------------------------------------------------------------------


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _outside_code(text: str) -> str:
    """`text` with fenced code blocks blanked (their lines kept, so line numbers hold)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


_LINK = re.compile(r"\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for line in _outside_code(path.read_text()).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = _slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _broken_links(path: Path) -> Iterator[str]:
    text = _outside_code(path.read_text())
    for target in _LINK.findall(text):
        if _SCHEME.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)} -> {target}"
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            yield f"{where} (no such file in the repository)"
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            yield f"{where} (no such heading)"
    # a `../` path in backticks is a link too, to be followed by hand
    for target in re.findall(r"`(\.\./[^`\s]+)`", text):
        resolved = (path.parent / target).resolve()
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            yield f"{path.relative_to(ROOT)} -> {target} (not a path in the repository)"


def test_markdown_relative_links_resolve() -> None:
    # Given the README and every page under docs/
    files = _markdown_files()
    # When each relative link is followed
    broken = [problem for path in files for problem in _broken_links(path)]
    # Then it reaches a file, folder or heading of the repository
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_markdown_code_paths_exist() -> None:
    # Given every repository path written in backticks in the README and docs/ (such as
    # `harness/runtime/bus.py` in journey.md), placeholders and globs aside
    named = [
        (path, target)
        for path in _markdown_files()
        for target in re.findall(r"`((?:harness|channels|tests|bench)/[^`\s]*)`", path.read_text())
        if "<" not in target and "*" not in target
    ]
    # When each is looked up
    missing = [f"{p.relative_to(ROOT)}: {t}" for p, t in named if not (ROOT / t).exists()]
    # Then it exists
    assert named, "no code paths found in the docs"
    assert not missing, "docs name paths that do not exist:\n" + "\n".join(missing)


def test_slug_follows_github() -> None:
    # Given headings with punctuation, code and a date
    # When they are turned into anchors
    # Then they are GitHub's
    assert _slug("High availability") == "high-availability"
    assert _slug("The wire floor (2026-12-02): the aim's budget is what the wire alone costs") == (
        "the-wire-floor-2026-12-02-the-aims-budget-is-what-the-wire-alone-costs"
    )
    assert _slug("MCP servers as tools") == "mcp-servers-as-tools"
    assert _slug("`send-reply` and the delivery record") == "send-reply-and-the-delivery-record"


# -- tables --------------------------------------------------------------------------


def _is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _is_separator(line: str) -> bool:
    return bool(re.fullmatch(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*", line))


def broken_tables(text: str) -> list[int]:
    """Line numbers (1-based) of `|` rows that follow a table after a blank line without
    starting a new table (a header row and its `---` separator): they render as raw text."""
    lines = _outside_code(text).splitlines()
    broken = []
    for i, line in enumerate(lines):
        if not _is_row(line) or i == 0 or lines[i - 1].strip():
            continue
        before = i - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        starts_table = i + 1 < len(lines) and _is_separator(lines[i + 1])
        if before >= 0 and _is_row(lines[before]) and not starts_table:
            broken.append(i + 1)
    return broken


def test_markdown_tables_are_not_cut_by_blank_lines() -> None:
    # Given the README (whose configuration table once broke this way) and docs/
    files = _markdown_files()
    # When their tables are read as GitHub reads them
    broken = {str(p.relative_to(ROOT)): broken_tables(p.read_text()) for p in files}
    # Then no table's rows continue after a blank line
    cut = {name: lines for name, lines in broken.items() if lines}
    assert not cut, f"table rows after a blank line render as text (file: lines): {cut}"


def test_broken_tables_finds_rows_after_a_blank_line() -> None:
    # Given a table cut by a blank line, and two tables one after the other
    cut = "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n"
    two = "| a | b |\n|---|---|\n| 1 | 2 |\n\n| c | d |\n|---|---|\n| 3 | 4 |\n"
    # When they are checked
    # Then only the cut one is reported, at its orphan row
    assert broken_tables(cut) == [5]
    assert broken_tables(two) == []
