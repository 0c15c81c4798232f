"""A Chroma store that keeps vectors only and reads its hits' texts from a full-text store.

Real embedded Chroma and a real BM25 store: what an index of the app does (its Chroma
collection holds no texts; the full-text store holds them once).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom.schema import Chunk
from ragloom.stores import BM25Store, ChromaVectorStore
from tests.core.stores.test_chroma_store import make_chunks, unit_vectors


@pytest.fixture
def texts(tmp_path: Path) -> BM25Store:
    return BM25Store(tmp_path / "bm25")


@pytest.fixture
def store(tmp_path: Path, texts: BM25Store) -> ChromaVectorStore:
    return ChromaVectorStore("vectors_only", path=tmp_path / "chroma", texts_from=texts)


def _stored_documents(store: ChromaVectorStore) -> list[str | None]:
    collection = store.client.get_collection("vectors_only")
    return list(collection.get(include=["documents"])["documents"] or [])


def test_hits_carry_the_full_text_stores_texts_and_chroma_keeps_none(
    store: ChromaVectorStore, texts: BM25Store
) -> None:
    chunks, vectors = make_chunks(6), unit_vectors(6)
    store.add(chunks, vectors)
    texts.add(chunks)
    hits = store.query(vectors[2], k=3)
    assert hits[0][0] == chunks[2] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert all(chunk.text == f"text of chunk {chunk.id}" for chunk, _ in hits)
    assert _stored_documents(store) == [None] * 6


def test_a_hit_the_full_text_store_does_not_hold_is_left_out(
    store: ChromaVectorStore, texts: BM25Store
) -> None:
    chunks, vectors = make_chunks(4), unit_vectors(4)
    store.add(chunks, vectors)
    texts.add(chunks[1:])  # chunk c0's text is not written yet (or was removed)
    found = [chunk.id for chunk, _ in store.query(vectors[0], k=4)]
    assert "c0" not in found and sorted(found) == ["c1", "c2", "c3"]


def test_the_source_filter_and_the_stored_vectors_work_as_without_it(
    store: ChromaVectorStore, texts: BM25Store
) -> None:
    first, second = make_chunks(3, "src-a", "a"), make_chunks(3, "src-b", "b")
    vectors = unit_vectors(6)
    store.add(first + second, vectors)
    texts.add(first + second)
    hits = store.query(vectors[0], k=6, source_ids=["src-b"])
    assert {chunk.source_id for chunk, _ in hits} == {"src-b"} and len(hits) == 3
    assert np.allclose(store.vectors(["a1"])["a1"], vectors[1], atol=1e-6)


def test_a_collection_written_with_texts_reads_them_from_the_full_text_store_too(
    tmp_path: Path,
) -> None:
    # A collection written before texts moved out: its hits still take the full-text
    # store's texts, which it always held.
    chunks, vectors = make_chunks(3), unit_vectors(3)
    ChromaVectorStore("vectors_only", path=tmp_path / "chroma").add(chunks, vectors)
    texts = BM25Store(tmp_path / "bm25")
    texts.add([Chunk(**{**vars(c), "text": c.text.upper()}) for c in chunks])
    store = ChromaVectorStore("vectors_only", path=tmp_path / "chroma", texts_from=texts)
    (hit, _), *_ = store.query(vectors[1], k=1)
    assert hit.text == "TEXT OF CHUNK C1"
