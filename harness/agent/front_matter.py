"""YAML front matter of the workspace's Markdown files (skills, agents): one reader for both.

---
name: value
---
body
"""

from __future__ import annotations

from dataclasses import dataclass

_FENCE = "---"


@dataclass(frozen=True)
class FrontMatter:
    """A file split at its front matter. `front` is the YAML between the fences (its first line
    is line 2 of the file); `body` what follows the closing fence, stripped."""

    front: str
    body: str


def split_front_matter(text: str) -> FrontMatter | None:
    """`text` split at its front matter, or None when it does not open with `---` and close it
    with another `---` line. A leading byte-order mark is ignored."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != _FENCE:
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip() == _FENCE:
            return FrontMatter("\n".join(lines[1:index]), "\n".join(lines[index + 1 :]).strip())
    return None
