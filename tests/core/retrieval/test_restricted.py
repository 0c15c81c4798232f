"""Retrievers limited in the sources they return, over a real BM25 store."""

from __future__ import annotations

from pathlib import Path

from ragloom.retrieval import FullTextRetriever
from ragloom.retrieval.restricted import ExcludingRetriever, RestrictedRetriever
from ragloom.schema import Chunk
from ragloom.stores import BM25Store

# The removed file ranks first for every query on "shift": its hits crowd the top.
CHUNKS = [
    *(
        Chunk(id=f"gone-{n}", text="shift shift shift rota", source_id="gone", source_name="g")
        for n in range(4)
    ),
    *(
        Chunk(id=f"kept-{n}", text=f"the {n} shift rota", source_id="kept", source_name="k")
        for n in range(4)
    ),
]


def _fulltext(tmp_path: Path) -> FullTextRetriever:
    store = BM25Store(tmp_path / "bm25")
    store.add(CHUNKS)
    return FullTextRetriever(store=store, top_k=3)


def test_excluded_sources_never_come_back_and_the_others_fill_their_places(
    tmp_path: Path,
) -> None:
    inner = _fulltext(tmp_path)
    assert {hit.chunk.source_id for hit in inner("shift")} == {"gone"}
    retriever = ExcludingRetriever(inner=inner, excluded_ids=["gone"], top_k=3)
    hits = retriever("shift")
    assert [hit.chunk.source_id for hit in hits] == ["kept"] * 3
    assert retriever("shift", top_k=0) == []


def test_fewer_than_top_k_come_back_rather_than_an_excluded_one(tmp_path: Path) -> None:
    inner = _fulltext(tmp_path)
    # At most 4 hits are asked of the store, and "gone" has the 4 best.
    retriever = ExcludingRetriever(inner=inner, excluded_ids=["gone"], top_k=2, max_fetch=4)
    assert retriever("shift") == []


def test_exclusion_keeps_a_restriction_inside_it(tmp_path: Path) -> None:
    inner = RestrictedRetriever(inner=_fulltext(tmp_path), source_ids=["gone"], top_k=3)
    assert ExcludingRetriever(inner=inner, excluded_ids=["gone"], top_k=3)("shift") == []
