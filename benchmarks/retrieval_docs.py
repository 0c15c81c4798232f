"""Retrieval recall on the SQLite documentation set: is a gold page among the first k passages?

Every ``*.html`` page under ``--root`` (Debian's ``sqlite3-doc``: 766 pages) is read by the
HTML reader, split by the default splitter (240 tokens of the embedding model, overlap 36)
and put in the real stores (Chroma, BM25), as a file index does. The 34 questions of
``qa.jsonl`` that have an answer (kinds single, multi, calc; the near misses are left out,
as the set's README asks) are searched the way the file index searches: hybrid retrieval,
with and without the definition prior (``ragloom.retrieval.DefinitionPrior``).

recall@k of a question is 1 when a chunk of one of its ``sources`` is among the first k
retrieved, else 0; the table gives the mean in %. "strict" counts the ``sources`` only,
"lenient" also the aggregate pages the README says repeat them (``changes.html``,
``capi3ref.html``, ``fileformat.html``, ``requirements.html``). No LLM is used.

Embeddings are cached by chunk text under ``--cache`` (default
``$TMPDIR/ragloom-docs-bench``), so a second run (after a change to the reader) embeds only
the chunks whose text changed. The stores are rebuilt in a temporary folder each run.

    .venv/bin/python benchmarks/retrieval_docs.py [--root /usr/share/doc/sqlite3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import REPO, configured_embeddings

from ragloom.embeddings import Embeddings
from ragloom.loaders.html import HtmlReader
from ragloom.retrieval import (
    FullTextRetriever,
    HybridRetriever,
    Retriever,
    VectorRetriever,
)
from ragloom.schema import Chunk
from ragloom.splitters import TokenSplitter
from ragloom.stores import BM25Store, ChromaVectorStore

DEFAULT_ROOT = Path("/usr/share/doc/sqlite3")
DEFAULT_QA = REPO.parent / "shared" / "data" / "sqlite-docs" / "qa.jsonl"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "ragloom-docs-bench"
AGGREGATES = ("changes.html", "capi3ref.html", "fileformat.html", "requirements.html")
KS = (1, 3, 5, 10)

logger = logging.getLogger(__name__)


def read_corpus(root: Path, embeddings: Embeddings) -> list[Chunk]:
    """Every page under ``root`` as chunks, named by its path relative to ``root``."""
    reader = HtmlReader()
    splitter = TokenSplitter(tokenizer=embeddings.count_tokens)
    chunks: list[Chunk] = []
    for number, path in enumerate(sorted(root.rglob("*.html"))):
        name = path.relative_to(root).as_posix()
        chunks.extend(splitter(reader.read(path), source_id=f"p{number:04d}", source_name=name))
    return chunks


def cached_vectors(chunks: list[Chunk], embeddings: Embeddings, cache: Path) -> np.ndarray:
    """The embedding of each chunk, computing only those not in ``cache`` yet."""
    cache.mkdir(parents=True, exist_ok=True)
    store = cache / "embeddings.npz"
    known: dict[str, np.ndarray] = {}
    if store.exists():
        with np.load(store) as saved:
            known = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))
    keys = [hashlib.sha1(c.text.encode()).hexdigest() for c in chunks]
    missing = sorted({k for k in keys if k not in known})
    texts = {k: c.text for k, c in zip(keys, chunks, strict=True)}
    if missing:
        started = time.perf_counter()
        vectors = embeddings.embed_documents([texts[k] for k in missing])
        known.update(zip(missing, vectors, strict=True))
        print(f"  embedded {len(missing)} new chunks in {time.perf_counter() - started:.0f} s")
        np.savez(store, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
    return np.stack([known[k] for k in keys])


def recall(found: list[list[str]], gold: list[set[str]], k: int) -> float:
    """Mean over questions of 1 if a gold page is among the first ``k`` found, in %."""
    hits = [bool(set(pages[:k]) & wanted) for pages, wanted in zip(found, gold, strict=True)]
    return 100.0 * sum(hits) / len(hits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the HTML pages")
    parser.add_argument("--qa", type=Path, default=DEFAULT_QA, help="the questions")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache")
    parser.add_argument("--details", action="store_true", help="the rank of each question")
    parser.add_argument(
        "--precision", choices=["fp32", "bf16", "int8"], help="default: flowsettings"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    items = [json.loads(line) for line in args.qa.read_text(encoding="utf-8").splitlines()]
    items = [item for item in items if item["kind"] != "negative"]
    embeddings = configured_embeddings(None, args.precision)
    started = time.perf_counter()
    chunks = read_corpus(args.root, embeddings)
    precision = getattr(embeddings, "precision", "?")
    print(
        f"Retrieval recall, SQLite docs: {len(chunks)} chunks, {len(items)} questions, "
        f"embeddings {getattr(embeddings, 'backend', '?')} {precision}"
    )
    print(f"  read and split in {time.perf_counter() - started:.0f} s")
    vectors = cached_vectors(chunks, embeddings, args.cache / str(precision))

    pipelines: dict[str, Retriever] = {}
    with tempfile.TemporaryDirectory(prefix="ragloom-docs-") as tmp:
        vector_store = ChromaVectorStore("docs", path=Path(tmp) / "chroma")
        fulltext_store = BM25Store(Path(tmp) / "bm25")
        vector_store.add(chunks, vectors)
        fulltext_store.add(chunks)
        vector = VectorRetriever(store=vector_store, embeddings=embeddings)
        fulltext = FullTextRetriever(store=fulltext_store)
        pipelines["full-text"] = fulltext
        pipelines["vector"] = vector
        pipelines["hybrid"] = HybridRetriever(retrievers=[vector, fulltext])
        pipelines.update(_with_prior(vector, fulltext))
        strict = [set(item["sources"]) for item in items]
        lenient = [wanted | set(AGGREGATES) for wanted in strict]
        print(f"  {'retriever':<24}" + "".join(f"{'@' + str(k):>7}" for k in KS) + "   lenient@5")
        for name, retriever in pipelines.items():
            found = [
                [hit.chunk.source_name for hit in retriever(item["question"], top_k=max(KS))]
                for item in items
            ]
            row = "".join(f"{recall(found, strict, k):7.1f}" for k in KS)
            print(f"  {name:<24}{row}{recall(found, lenient, 5):12.1f}")
            if args.details:
                for item, pages in zip(items, found, strict=True):
                    rank = next((i + 1 for i, p in enumerate(pages) if p in item["sources"]), "-")
                    print(f"    {item['id']} rank {rank}: {', '.join(pages[:3])}")


def _with_prior(vector: Retriever, fulltext: Retriever) -> dict[str, Retriever]:
    """Hybrid with the definition prior, when this checkout has it (the file index's way)."""
    try:
        from ragloom.retrieval import DefinitionPrior
    except ImportError:  # a checkout from before the prior: the baseline
        return {}
    hybrid = HybridRetriever(retrievers=[vector, fulltext], prior=DefinitionPrior())
    return {"hybrid + definition prior": hybrid}


if __name__ == "__main__":
    main()
