"""The sentence focus on int8 embeddings against fp32: the same sentences kept, how fast?

The sentence focus (``ragloom.retrieval.SentenceFocus``) embeds every sentence of the
passages retrieved for a question and keeps the few nearest the question; under load its
embedding is most of a FullQA answer's own work (docs/performance.md, "Many users at
once"). int8 embeddings were judged too lossy for the index's vectors (retrieval recall on
the SQLite documentation set, docs/performance.md); the focus only ranks a few dozen
sentences of passages already found, so it is judged here by what it decides.

For every question of both development sets (State of the Union: 74; SQLite documentation:
the 40 of ``qa.jsonl``), the passages are the ``--top-k`` chunks nearest the question by
fp32 vectors (the speech split at 240 tokens; for the manual, every chunk of the pages
the questions cite, plus the pages of every ``--distractors``-th page of the manual). The
focus then chooses its sentences on fp32 and on int8 embeddings, and the report gives how
often both keep the very same spans (then the prompt, and so the answer, is the same), the
mean overlap of the kept sentences, and the focus's time with cold caches.

    .venv/bin/python benchmarks/focus_precision.py
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import statistics
import time
from pathlib import Path

import numpy as np
from _common import REPO, configured_embeddings

from ragloom.embeddings import Embeddings
from ragloom.loaders.html import HtmlReader
from ragloom.retrieval import SentenceFocus
from ragloom.schema import Chunk, Page, RetrievedChunk
from ragloom.splitters import TokenSplitter

DATA = REPO.parent / "shared" / "data"
DOCS = Path("/usr/share/doc/sqlite3")


def speech_set(data: Path, counter: Embeddings) -> tuple[list[str], list[Chunk]]:
    """The State of the Union questions and the speech's chunks."""
    text = (data / "sotu" / "state_of_the_union.txt").read_text(encoding="utf-8")
    with (data / "sotu" / "sotu_qa.csv").open(encoding="utf-8") as handle:
        questions = [row["question"] for row in csv.DictReader(handle)]
    splitter = TokenSplitter(tokenizer=counter.count_tokens)
    return questions, splitter([Page(text)], source_id="sotu", source_name="sotu.txt")


def docs_set(
    data: Path, root: Path, counter: Embeddings, every: int
) -> tuple[list[str], list[Chunk]]:
    """The SQLite documentation questions and the chunks of the pages they cite, with
    every ``every``-th other page of the manual among them."""
    items = [
        json.loads(line) for line in (data / "sqlite-docs" / "qa.jsonl").read_text().splitlines()
    ]
    pages = sorted(root.rglob("*.html"))
    if not pages:
        raise SystemExit(f"no HTML pages under {root}: apt-get install sqlite3-doc")
    cited = {source for item in items for source in item["sources"]}
    chosen = [
        p for n, p in enumerate(pages) if p.relative_to(root).as_posix() in cited or n % every == 0
    ]
    splitter = TokenSplitter(tokenizer=counter.count_tokens)
    reader = HtmlReader()
    chunks = [
        chunk
        for n, page in enumerate(chosen)
        for chunk in splitter(reader.read(page), source_id=f"p{n}", source_name=page.name)
    ]
    return [item["question"] for item in items], chunks


def passages(
    questions: list[str], chunks: list[Chunk], fp32: Embeddings, k: int
) -> list[list[RetrievedChunk]]:
    """For each question, the ``k`` chunks nearest it by fp32 vectors."""
    vectors = fp32.embed_documents([c.text for c in chunks])
    found = []
    for question in questions:
        scores = vectors @ fp32.embed_query(question)
        found.append([RetrievedChunk(chunks[i], float(scores[i])) for i in np.argsort(-scores)[:k]])
    return found


def compare(
    name: str, questions: list[str], hits: list[list[RetrievedChunk]], sentences: int
) -> None:
    """Print how often the two precisions keep the same spans, and the focus's time."""
    same, overlaps, times = 0, [], {"fp32": [], "int8": []}
    for question, found in zip(questions, hits, strict=True):
        kept = {}
        for precision in ("fp32", "int8"):
            # A new object each time: its caches are empty, as for passages seen first.
            focus = SentenceFocus(
                embeddings=configured_embeddings(None, precision), sentences=sentences
            )
            started = time.perf_counter()
            kept[precision] = focus.run(question, found)
            times[precision].append(time.perf_counter() - started)
        a = {(h, span) for h, spans in enumerate(kept["fp32"]) for span in spans or ()}
        b = {(h, span) for h, spans in enumerate(kept["int8"]) for span in spans or ()}
        same += a == b
        overlaps.append(len(a & b) / len(a | b) if a | b else 1.0)
    fp32, int8 = (statistics.median(times[p]) * 1000 for p in ("fp32", "int8"))
    share, overlap = 100 * same / len(questions), 100 * statistics.mean(overlaps)
    print(
        f"  {name:<22}{len(questions):>4} questions   same spans {same:>3} ({share:5.1f} %)"
        f"   mean overlap {overlap:5.1f} %   focus p50 fp32 {fp32:6.1f} ms, int8 {int8:6.1f} ms"
        f" ({fp32 / int8:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--root", type=Path, default=DOCS, help="SQLite's HTML pages")
    parser.add_argument("--top-k", type=int, default=3, help="passages a question gets (FullQA's)")
    parser.add_argument("--sentences", type=int, default=4, help="sentences the focus keeps")
    parser.add_argument("--distractors", type=int, default=8, help="every n-th page besides")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    fp32 = configured_embeddings(None, "fp32")
    configured_embeddings(None, "int8").embed_query("warm up")  # made once from fp32's graph
    print(
        f"Sentence focus, fp32 against int8 embeddings: {args.top_k} passages a question, "
        f"{args.sentences} sentences kept (with their neighbours)"
    )
    for name, (questions, chunks) in (
        ("State of the Union", speech_set(args.data, fp32)),
        ("SQLite documentation", docs_set(args.data, args.root, fp32, args.distractors)),
    ):
        compare(name, questions, passages(questions, chunks, fp32, args.top_k), args.sentences)


if __name__ == "__main__":
    main()
