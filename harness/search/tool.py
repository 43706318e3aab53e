"""The `search` tool: ranked passages from the conversation's memory, its own past sessions
and the user's documents, in every memory scope.

The file tools cannot see a per-chat or per-person memory (it lives in the state folder), so
`grep` is no way to recall it; this tool searches exactly what the conversation may see
(`harness.search.corpora`): the memory root in `ctx.extras["memory_root"]` (the workspace
without one), the transcript in `ctx.transcript`, and `knowledge/`. Before each query the
corpora searched are brought up to date (`harness.search.freshness`: only the files a
watcher or this process's own writes marked changed, and every file once per `rescan`
seconds). The index and the watcher start on first use, so building a tool registry starts
nothing. With an embedder (`EMBEDDINGS_PROVIDER`), ranking is hybrid (`harness.search.hybrid`);
when its endpoint fails the result says it was ranked by keywords only.

Results from `knowledge/` are outside content: the call is wrapped and taints the turn
(`harness.agent.untrusted.source_of`) unless it searched only memory or the chat.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Literal

from pydantic import Field

from harness.search.corpora import (
    ARCHIVE_DIR,
    Corpus,
    chat_corpus,
    knowledge_corpus,
    memory_corpus,
)
from harness.search.embeddings import Embedder
from harness.search.freshness import DEFAULT_RESCAN_S, Freshness, shared_freshness
from harness.search.hybrid import Ranker
from harness.search.index import Hit, SearchIndex
from harness.tools.base import Tool, ToolContext, ToolParams

INDEX_FILE = Path("search") / "index.sqlite"
MEMORY_ROOT_EXTRA = "memory_root"
Within = Literal["all", "memory", "chat", "knowledge"]


class SearchParams(ToolParams):
    """Arguments of the search tool."""

    query: str = Field(min_length=1, max_length=500, description="Words to look for.")
    within: Within = Field(
        default="all",
        description=(
            "Where to look: 'memory' (your notes and MEMORY.md), 'chat' (this conversation's "
            "earlier messages), 'knowledge' (the user's documents) or 'all'."
        ),
    )
    limit: int = Field(default=5, ge=1, le=20, description="Most passages to return.")


class SearchTool(Tool[SearchParams]):
    """Return the best passages for `query`, one block each: rank, source, position and a
    snippet with the matched words in [brackets]; a line saying so when nothing matched.

    Searches the index at `index_path` (created on first call), kept fresh by `freshness`
    (default: this process's, `shared_freshness(rescan)`). Never reads a link."""

    name = "search"
    description = (
        "Search what you know: your memory (daily notes, MEMORY.md and its past versions), "
        "this conversation's earlier messages, and the user's documents in knowledge/ "
        "(Markdown, text, PDF, HTML). Returns ranked passages with their source and position. "
        "Use it before saying you do not know or remember something."
    )
    parameters = SearchParams
    timeout = 120.0
    outside_content = True

    def __init__(
        self,
        index_path: Path,
        embedder: Embedder | None = None,
        rescan: float = DEFAULT_RESCAN_S,
        freshness: Freshness | None = None,
    ) -> None:
        self.index_path = index_path
        self.embedder = embedder
        self.rescan = rescan
        self._freshness = freshness
        self._index: SearchIndex | None = None
        self._ranker: Ranker | None = None
        self._opening = threading.Lock()

    def index(self) -> SearchIndex:
        """The index, opened on first use."""
        with self._opening:
            if self._index is None:
                self._index = SearchIndex(self.index_path)
            return self._index

    def ranker(self) -> Ranker:
        """The ranker over the index, made on first use."""
        index = self.index()
        with self._opening:
            if self._ranker is None:
                self._ranker = Ranker(index, self.embedder)
            return self._ranker

    def freshness(self) -> Freshness:
        """What decides which files to sync before a query: the one given, else this
        process's (its watcher started at the first query)."""
        return self._freshness or shared_freshness(self.rescan)

    def run(self, params: SearchParams, ctx: ToolContext) -> str:
        """Search; see the class docstring."""
        index, freshness = self.index(), self.freshness()
        chosen = [c for c in visible_corpora(ctx) if params.within in ("all", c.kind)]
        for corpus in chosen:
            freshness.bring_up_to_date(index, corpus)
        kinds = {c.key: c.kind for c in chosen}
        ranked = self.ranker().rank(params.query, list(kinds), params.limit)
        note = [ranked.note] if ranked.note else []
        if not ranked.hits:
            return "\n".join([f"nothing found for {params.query!r} in {params.within}", *note])
        return "\n\n".join(
            [f"{n}. {describe(kinds[h.key], h)}\n{h.snippet}" for n, h in enumerate(ranked.hits, 1)]
            + note
        )


def visible_corpora(ctx: ToolContext) -> list[Corpus]:
    """The corpora a tool call's conversation may search: its memory root's, its own
    transcript's (when it has one) and the workspace's knowledge folder."""
    root = ctx.extras.get(MEMORY_ROOT_EXTRA, ctx.workspace)
    memory = root if isinstance(root, Path) else ctx.workspace
    found = [memory_corpus(memory), knowledge_corpus(ctx.workspace)]
    if ctx.transcript is not None:
        found.append(chat_corpus(ctx.transcript))
    return found


def describe(kind: str, hit: Hit) -> str:
    """Where a hit comes from, as the model reads it: `memory: memory/2026-07-01.md, line 3`,
    `knowledge: knowledge/a.pdf, page 2, line 1`, `this chat (an earlier part), line 4, ...`."""
    if kind == "chat":
        earlier = " (an earlier part)" if hit.path.startswith(f"{ARCHIVE_DIR}/") else ""
        return f"this chat{earlier}, {hit.position}"
    return f"{kind}: {hit.path}, {hit.position}"
