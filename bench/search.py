"""Benchmark of search (`harness.search`): the FTS5 index against `grep -r` of the same files.

Generates a workspace of `--notes` memory notes (five to a daily log, `memory/YYYY-MM-DD.md`)
and `--pages` document pages (four to a document in `knowledge/`, one document in five HTML,
the rest Markdown) from a fixed seed: filler text drawn from a synthetic vocabulary (Zipf), the
50 facts of `bench/data/search_questions.json` each planted on its page, and every fact's
entity also planted on three distractor pages without the fact. Then, in the same run:

- **build:** indexing everything from empty (`SearchIndex.sync` of the memory and knowledge
  corpora), against one `grep -r -i` of the same folders for a word;
- **update:** one daily log changed through our own writer (`workspace_files.write_replace`,
  as the file tools do), then the memory corpus brought up to date as the tool does it
  (`Freshness`: that one path stamped, read and re-indexed), the median of five such
  updates, against a grep for the change; and the same with a full listing of every log
  (what the tool did before the watcher, and does once per `SEARCH_RESCAN` seconds);
- **query:** each of the 50 questions, as the tool does it (the freshness check of both
  corpora with the watcher running, then the ranked query), with a full listing of both
  corpora instead (the old path), and the ranked query alone, against `grep -r -i -E` of the
  question's words (OR'ed, as the index does), p50 and p99; and the first query of a process
  (setting the watches, listing everything once);
- **recall:** the share of questions whose planted page's document is in the top 5 (BM25).

Usage: python -m bench.search [--notes 10000] [--pages 1000] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from functools import partial
from pathlib import Path

from bench.stats import percentile
from harness.search.corpora import KNOWLEDGE_DIR, Corpus, knowledge_corpus, memory_corpus
from harness.search.freshness import Freshness
from harness.search.index import SearchIndex, Synced, match_expression
from harness.workspace_files import write_replace

QUESTIONS = Path(__file__).parent / "data" / "search_questions.json"
NOTES_PER_LOG = 5
PAGES_PER_DOCUMENT = 4
DISTRACTORS = 3
UPDATES = 5
FIRST_DAY = date(2020, 1, 1)


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    """`size` distinct made-up words of two to four syllables."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def filler(rng: random.Random, words: list[str], weights: list[float], count: int) -> str:
    """`count` words drawn by Zipf weights, in sentences of about ten."""
    drawn = rng.choices(words, weights, k=count)
    return " ".join(w + ("." if i % 10 == 9 else "") for i, w in enumerate(drawn))


def generate(
    root: Path, notes: int, pages: int, seed: int, questions: list[dict[str, object]]
) -> None:
    """Write the workspace described in the module docstring under `root`."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    (root / "memory").mkdir(parents=True)
    (root / KNOWLEDGE_DIR).mkdir()
    for log in range((notes + NOTES_PER_LOG - 1) // NOTES_PER_LOG):
        day = FIRST_DAY + timedelta(days=log)
        entries = [
            f"### {9 + n}:00:00\n{filler(rng, words, weights, 20)}\n"
            for n in range(min(NOTES_PER_LOG, notes - log * NOTES_PER_LOG))
        ]
        (root / "memory" / f"{day.isoformat()}.md").write_text(f"# {day}\n\n" + "\n".join(entries))
    planted: dict[int, list[str]] = {}
    for q in questions:
        page = int(str(q["document"])) % pages
        planted.setdefault(page, []).append(str(q["fact"]))
        for _ in range(DISTRACTORS):
            other = rng.randrange(pages)
            planted.setdefault(other, []).append(f"Notes on the {q['entity']}: see the manual.")
    for doc in range((pages + PAGES_PER_DOCUMENT - 1) // PAGES_PER_DOCUMENT):
        texts = []
        for p in range(doc * PAGES_PER_DOCUMENT, min(pages, (doc + 1) * PAGES_PER_DOCUMENT)):
            paragraphs = [filler(rng, words, weights, 60) for _ in range(5)]
            for fact in planted.get(p, []):
                paragraphs.insert(rng.randrange(len(paragraphs) + 1), fact)
            texts.append(f"## Page {p}\n\n" + "\n\n".join(paragraphs))
        if doc % 5 == 4:
            body = "".join(f"<h2>{t.splitlines()[0][3:]}</h2><p>{t}</p>" for t in texts)
            (root / KNOWLEDGE_DIR / f"doc-{doc:04d}.html").write_text(
                f"<html><head><title>Document {doc}</title></head><body>{body}</body></html>"
            )
        else:
            (root / KNOWLEDGE_DIR / f"doc-{doc:04d}.md").write_text("\n\n".join(texts))


def document_of(page: int, pages: int) -> str:
    """The file holding generated page `page`."""
    doc = (page % pages) // PAGES_PER_DOCUMENT
    return f"{KNOWLEDGE_DIR}/doc-{doc:04d}.{'html' if doc % 5 == 4 else 'md'}"


def timed(action: Callable[[], object]) -> float:
    """Seconds `action` took."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def grep(root: Path, pattern: str) -> None:
    """`grep -r -i -E pattern` over the memory and knowledge folders, output discarded."""
    subprocess.run(
        ["grep", "-r", "-i", "-E", pattern, "memory", KNOWLEDGE_DIR],
        cwd=root,
        stdout=subprocess.DEVNULL,
        check=False,
    )


def sync(index: SearchIndex, corpus: Corpus) -> Synced:
    """List every file of one corpus and bring it up to date (the path before the watcher)."""
    return index.sync(corpus.key, corpus.listing(), corpus.read, corpus.parse)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    questions = json.loads(QUESTIONS.read_text())["questions"]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "workspace"
        generate(root, args.notes, args.pages, args.seed, questions)
        index = SearchIndex(Path(folder) / "state" / "index.sqlite")
        memory, knowledge = memory_corpus(root), knowledge_corpus(root)
        build = timed(lambda: (sync(index, memory), sync(index, knowledge)))
        build_grep = timed(lambda: grep(root, "warranty"))
        freshness = Freshness(rescan=3600.0)
        first = timed(
            lambda: (
                freshness.bring_up_to_date(index, memory),
                freshness.bring_up_to_date(index, knowledge),
            )
        )
        logs = sorted((root / "memory").glob("*.md"))
        updates, full_updates = [], []
        for n, changed in enumerate(logs[:: max(1, len(logs) // UPDATES)][:UPDATES]):
            name = f"memory/{changed.name}"
            note = f"\n### 23:00:00\nThe spare key number {n} is under the blue pot.\n"
            write_replace(root, name, (changed.read_text() + note).encode())
            updates.append(timed(lambda: freshness.bring_up_to_date(index, memory)))
            assert index.query(f"spare key {n}", [memory.key])[0].path == name
            note = f"\n### 23:30:00\nThe red bicycle number {n} is in the shed.\n"
            changed.write_text(changed.read_text() + note)
            full_updates.append(timed(lambda: sync(index, memory)))
            assert index.query(f"bicycle {n}", [memory.key])[0].path == name
        update_grep = timed(lambda: grep(root, "spare key"))
        keys = [memory.key, knowledge.key]
        checks_before = index.checks
        tool: list[float] = []
        full: list[float] = []
        ranked: list[float] = []
        greps: list[float] = []
        hits = 0
        for q in questions:
            text = str(q["question"])

            def with_freshness(text: str = text) -> None:
                freshness.bring_up_to_date(index, memory)
                freshness.bring_up_to_date(index, knowledge)
                index.query(text, keys, 5)

            def listing_first(text: str = text) -> None:
                sync(index, memory)
                sync(index, knowledge)
                index.query(text, keys, 5)

            pattern = "|".join(w.strip('"') for w in match_expression(text).split(" OR "))
            tool.append(timed(with_freshness))
            full.append(timed(listing_first))
            ranked.append(timed(partial(index.query, text, keys, 5)))
            greps.append(timed(partial(grep, root, pattern)))
            top = [h.path for h in index.query(text, keys, 5)]
            hits += document_of(int(q["document"]), args.pages) in top
        checks = index.checks
        freshness.close()
        index.close()
    ms = 1000.0
    grep_p50 = percentile(greps, 0.5) * ms
    rows = [
        ("index build (all files)", build * ms, None, build_grep * ms),
        ("first query of a process (watches set, every file listed)", first * ms, None, grep_p50),
        ("update (one log changed by our writer, median of 5)", percentile(updates, 0.5) * ms,
         None, update_grep * ms),
        ("update, listing every file (median of 5)", percentile(full_updates, 0.5) * ms, None,
         update_grep * ms),
        ("query, with freshness check (watcher)", percentile(tool, 0.5) * ms,
         percentile(tool, 0.99) * ms, grep_p50),
        ("query, listing every file first", percentile(full, 0.5) * ms,
         percentile(full, 0.99) * ms, grep_p50),
        ("query, ranked only", percentile(ranked, 0.5) * ms, percentile(ranked, 0.99) * ms,
         grep_p50),
    ]  # fmt: skip
    print(f"{args.notes} notes, {args.pages} pages; grep p99 {percentile(greps, 0.99) * ms:.1f} ms")
    print("| measure | ms (p50) | p99 | grep -r, same run (p50) | ratio |")
    print("|---|---|---|---|---|")
    for name, value, p99, floor in rows:
        shown_p99 = f"{p99:.1f}" if p99 is not None else ""
        print(f"| {name} | {value:.1f} | {shown_p99} | {floor:.1f} | {value / floor:.2f}x |")
    print(
        f"the {len(questions)} queries' freshness checks and the {len(questions)} full"
        f" listings: {checks.full_syncs - checks_before.full_syncs} full syncs,"
        f" {checks.path_syncs - checks_before.path_syncs} path syncs,"
        f" {checks.stamps - checks_before.stamps} stamps compared"
    )
    print(f"recall: right source in the top 5 for {hits} of {len(questions)} questions")


if __name__ == "__main__":
    main()
