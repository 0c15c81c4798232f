"""The check before answering on the SQLite documentation set: declines per kind, no LLM.

    .venv/bin/python benchmarks/precheck_docs.py
    .venv/bin/python benchmarks/precheck_docs.py --data ../shared/data/sqlite-docs --top-k 3
    .venv/bin/python benchmarks/precheck_docs.py --sotu ../shared/data/sotu   # the speech

Every ``*.html`` page under ``--root`` is read by the HTML reader and cut by the token
splitter (240/36, a rough word count: no embedding model) into a BM25 store, the full-text
store of a file index. Each of the 40 questions then goes through
:func:`~ragloom.qa.precheck.check_question`, with the store's ``find_terms`` as the index
lookup; with ``--in-passages``, also against its BM25 top ``--top-k`` as the retrieved
passages (a file index fuses these with vector search, which finds other passages: the
"not in passages" figures are indicative).

A question of kind ``negative`` should be declined; every other kind should not. With
``--sotu``, the State of the Union set instead (one text, 74 answerable questions, kind
``sotu``, without their "Based on State of the Union Address 2023:" prefix): none should be. Prints
one line per declined question and a table per kind, and the seconds the checks took
against the seconds of the BM25 searches of the same questions (a ratio, same run).
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import tempfile
import time
from collections import Counter
from pathlib import Path

from ragloom.loaders.html import HtmlReader
from ragloom.qa.precheck import check_question
from ragloom.schema import Page, RetrievedChunk
from ragloom.splitters import TokenSplitter
from ragloom.stores import BM25Store

logger = logging.getLogger("precheck_docs")


def build_store(root: Path, folder: Path) -> BM25Store:
    """A BM25 store of every page under ``root``, as a file index chunks them."""
    store = BM25Store(folder)
    reader, splitter = HtmlReader(), TokenSplitter(chunk_size=240, chunk_overlap=36)
    pages = sorted(root.rglob("*.html"))
    for number, path in enumerate(pages):
        name = str(path.relative_to(root))
        chunks = splitter.run(reader.read(path), source_id=f"s{number}", source_name=name)
        store.add(chunks)
    logger.info("indexed %d pages, %d chunks", len(pages), store.count())
    return store


def sotu_store(folder: Path, data: Path) -> tuple[BM25Store, list[dict[str, str]]]:
    """The speech in a BM25 store, and its questions (all answerable)."""
    store = BM25Store(folder)
    text = (data / "state_of_the_union.txt").read_text(encoding="utf-8")
    splitter = TokenSplitter(chunk_size=240, chunk_overlap=36)
    store.add(splitter.run([Page(text)], source_id="sotu", source_name="sotu.txt"))
    with (data / "sotu_qa.csv").open(encoding="utf-8") as rows:
        items = [
            {"id": f"q{n}", "kind": "sotu", "question": row["question"].split(":", 1)[-1]}
            for n, row in enumerate(csv.DictReader(rows))
        ]
    return store, items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/sqlite-docs"))
    parser.add_argument("--root", type=Path, default=Path("/usr/share/doc/sqlite3"))
    parser.add_argument("--sotu", type=Path, help="the State of the Union set's folder instead")
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument(
        "--in-passages", action="store_true", help="also decline when no passage holds them"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        if args.sotu is not None:
            store, items = sotu_store(Path(tmp) / "bm25", args.sotu)
        else:
            store = build_store(args.root, Path(tmp) / "bm25")
            lines = (args.data / "qa.jsonl").open(encoding="utf-8")
            items = [json.loads(line) for line in lines]
        declined: Counter[str] = Counter()
        total: Counter[str] = Counter()
        by_reason: Counter[str] = Counter()
        search_seconds = check_seconds = 0.0
        for item in items:
            started = time.perf_counter()
            hits = store.query(item["question"], args.top_k)
            search_seconds += time.perf_counter() - started
            retrieved = [RetrievedChunk(chunk, score) for chunk, score in hits]
            started = time.perf_counter()
            check = check_question(item["question"], retrieved, store.find_terms, args.in_passages)
            check_seconds += time.perf_counter() - started
            total[item["kind"]] += 1
            if check.declined:
                declined[item["kind"]] += 1
                reason = "missing" if check.missing else "not_in_passages"
                by_reason[f"{item['kind']}:{reason}"] += 1
                logger.info(
                    "%s declined: missing %s, not in passages %s",
                    item["id"],
                    check.missing,
                    check.not_in_passages,
                )
        store.close()
    print(f"{'kind':10} {'questions':>9} {'declined':>8}")
    for kind in sorted(total):
        print(f"{kind:10} {total[kind]:9d} {declined[kind]:8d}")
    print("by reason:", dict(by_reason))
    positives = sum(total.values()) - total["negative"]
    wrong = sum(declined.values()) - declined["negative"]
    print(f"positives wrongly declined: {wrong}/{positives}")
    print(f"negatives caught: {declined['negative']}/{total['negative']}")
    ratio = check_seconds / search_seconds if search_seconds else float("nan")
    print(f"check {check_seconds:.3f} s vs BM25 search {search_seconds:.3f} s: x{ratio:.2f}")


if __name__ == "__main__":
    main()
