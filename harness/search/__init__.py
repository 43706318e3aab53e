"""Search over what an agent may know: its memory, its chat's past sessions and the user's
documents (`knowledge/`), ranked by SQLite FTS5 (BM25), and by meaning with embeddings.

    extract.py   a file's bytes -> passages with their position (Markdown, text, PDF, HTML)
    index.py     the FTS5 index in the state folder, brought up to date file by file
    corpora.py   which files one conversation may search (its memory scope's roots)
    embeddings.py, openai_embeddings.py   optional vectors from an embeddings endpoint
    vectors.py   the passages' vectors, beside them in the index file
    hybrid.py    ranking: BM25 alone, or fused with embeddings by Reciprocal Rank Fusion
    freshness.py what a query syncs first: the paths a watcher or our own writes marked
    tool.py      the agent's `search` tool
"""
