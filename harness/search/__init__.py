"""Search over what an agent may know: its memory, its chat's past sessions and the user's
documents (`knowledge/`), ranked by SQLite FTS5 (BM25).

    extract.py   a file's bytes -> passages with their position (Markdown, text, PDF, HTML)
    index.py     the FTS5 index in the state folder, brought up to date file by file
    corpora.py   which files one conversation may search (its memory scope's roots)
    freshness.py what a query syncs first: the paths a watcher or our own writes marked
    tool.py      the agent's `search` tool
"""
