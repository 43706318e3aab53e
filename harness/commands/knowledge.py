"""`harness knowledge`: the user's documents the agent's `search` tool ranks.

    harness knowledge add FILE... [--force]   copy documents into <workspace>/knowledge/
                                              and index them now
    harness knowledge list                    the documents, their size and passages indexed
    harness knowledge reindex                 forget the whole index and index knowledge/
                                              and the shared memory again

All three work on the files and the index (`<state>/search/index.sqlite`) directly, with the
fleet up or down; the fleet's own searches bring what changed up to date as they run, so
`reindex` is only for an index that went wrong. Documents may also be put in `knowledge/`
by any other means (the agent's `write`, a sync tool): the next search indexes them.
Each takes `--json` (see docs/cli.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.commands.exit_codes import FAILED, USAGE
from harness.commands.one_line_errors import fail
from harness.commands.output import JsonOption, emit_json, print_rows
from harness.commands.progress import waiting
from harness.search.corpora import KNOWLEDGE_DIR, knowledge_corpus, memory_corpus
from harness.search.extract import SUFFIXES, searchable
from harness.search.index import SearchIndex
from harness.search.tool import INDEX_FILE
from harness.settings import get_settings
from harness.state_dir import state_dir
from harness.workspace_files import lstat, write_replace

knowledge_app = typer.Typer(
    help="The user's documents for the agent's search: add, list, reindex.",
    no_args_is_help=True,
)


def _workspace() -> Path:
    return get_settings().agent_workspace.resolve()


def _index() -> SearchIndex:
    return SearchIndex(state_dir(get_settings()) / INDEX_FILE)


def _sync_knowledge(index: SearchIndex, workspace: Path) -> int:
    corpus = knowledge_corpus(workspace)
    return len(index.sync(corpus.key, corpus.listing(), corpus.read, corpus.parse).indexed)


@knowledge_app.command("add")
def add(
    files: Annotated[list[Path], typer.Argument(help="Documents: Markdown, text, PDF, HTML.")],
    force: Annotated[bool, typer.Option("--force", help="Replace a document of that name.")] = (
        False
    ),
    as_json: JsonOption = False,
) -> None:
    """Copy each FILE into knowledge/ under its own name and index it. `--json`:
    `{"added": [{"path", "bytes"}], "indexed": N}`."""
    workspace = _workspace()
    added: list[dict[str, object]] = []
    for file in files:
        target = f"{KNOWLEDGE_DIR}/{file.name}"
        if not searchable(file.name):
            kinds = ", ".join(sorted(s for s in SUFFIXES if s))
            raise fail([f"{file}: not a kind search reads ({kinds})"], USAGE)
        if lstat(workspace, target) is not None and not force:
            raise fail([f"{target} exists; --force replaces it"], FAILED)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise fail([f"cannot read {file}: {exc.strerror or exc}"], FAILED) from exc
        write_replace(workspace, target, data)
        added.append({"path": target, "bytes": len(data)})
        if not as_json:
            typer.echo(f"added {target} ({len(data)} bytes)")
    index = _index()
    try:
        with waiting("indexing knowledge/", hidden=as_json):
            indexed = _sync_knowledge(index, workspace)
    finally:
        index.close()
    if as_json:
        emit_json({"added": added, "indexed": indexed})
        return
    typer.echo(f"indexed {indexed} changed document(s)")


@knowledge_app.command("list")
def list_documents(as_json: JsonOption = False) -> None:
    """List the documents in knowledge/ with their size and whether they are indexed.
    `--json`: `[{"path", "bytes", "indexed": bool}]`."""
    workspace = _workspace()
    corpus = knowledge_corpus(workspace)
    index = _index()
    try:
        indexed = index.files(corpus.key)
    finally:
        index.close()
    listed = [
        {"path": path, "bytes": stamp.size, "indexed": indexed.get(path) == stamp}
        for path, stamp in sorted(corpus.listing().items())
    ]
    if as_json:
        emit_json(listed)
        return
    rows = [
        [str(d["path"]), str(d["bytes"]), "yes" if d["indexed"] else "at the next search"]
        for d in listed
    ]
    print_rows(["document", "bytes", "indexed"], rows, 1)


@knowledge_app.command("reindex")
def reindex(as_json: JsonOption = False) -> None:
    """Forget the index and index knowledge/ and the shared memory again (each chat's own
    memory and transcript are indexed again at its next search). `--json`: `{"documents": N,
    "memory_files": N}`."""
    workspace = _workspace()
    index = _index()
    try:
        with waiting("indexing knowledge/ and the shared memory again", hidden=as_json):
            index.clear()
            documents = _sync_knowledge(index, workspace)
            memory = memory_corpus(workspace)
            notes = index.sync(memory.key, memory.listing(), memory.read, memory.parse).indexed
    finally:
        index.close()
    if as_json:
        emit_json({"documents": documents, "memory_files": len(notes)})
        return
    typer.echo(f"indexed {documents} document(s) and {len(notes)} memory file(s)")
