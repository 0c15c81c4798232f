"""A source that stopped being searchable (its removal, or its failure's clean-up, could
not reach a store) is never found, whatever the store still holds of it, until the
removal is finished."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.stores.base import StoreUnavailableError
from ragloom_app.index.file import FileIndex

SECRET = "# Launch\n\nThe launch password is Quillfeather, kept by the night shift.\n"
PUBLIC = "# Canteen\n\nThe canteen serves lunch from noon to two, run by the night shift.\n"


def _indexed(index: FileIndex, folder: Path) -> dict[str, str]:
    folder.mkdir()
    (folder / "secret.md").write_text(SECRET)
    (folder / "public.md").write_text(PUBLIC)
    outcomes = index.get_indexing_pipeline({}).run(sorted(folder.iterdir()))
    assert {o.status for o in outcomes} == {"indexed"}
    return {s["name"]: s["id"] for s in index.list_sources()}


def _names(index: FileIndex, question: str, mode: str, selected: list[str] | None) -> set[str]:
    (retriever,) = index.get_retriever_pipelines(
        {"retrieval_mode": mode, "top_k": 5}, selected=selected
    )
    return {hit.chunk.source_name for hit in retriever(question)}


def test_a_removal_cut_short_by_the_vector_store_hides_the_file_from_every_search(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _indexed(index, tmp_path / "docs")

    def away(source_id: str) -> None:
        raise StoreUnavailableError("the Chroma server cannot be reached")

    with monkeypatch.context() as patch:
        patch.setattr(index.vector_store, "delete_source", away)
        with pytest.raises(StoreUnavailableError):
            index.remove_source("secret.md")
    statuses = {s["name"]: s["status"] for s in index.list_sources()}
    assert statuses == {"secret.md": "removing", "public.md": "indexed"}
    assert index.vector_store.count() > 0  # the secret's vectors are still in Chroma
    question = "What is the launch password kept by the night shift?"
    for mode in ("hybrid", "vector", "fulltext"):
        # Nothing selected, and the selection of every file the user still sees, which
        # searches without a filter.
        for selected in (None, [ids["public.md"]]):
            found = _names(index, question, mode, selected)
            assert found == {"public.md"}, (mode, selected)
        # Even selected by id (the list a client had before the removal).
        assert _names(index, question, mode, [ids["secret.md"]]) == set(), mode
    assert index.find_terms(["quillfeather", "canteen"]) == {
        "quillfeather": False,
        "canteen": True,
    }
    # Once the store is back, the removal is finished and the rest stays found.
    index.check(repair=True)
    assert [s["name"] for s in index.list_sources()] == ["public.md"]
    assert _names(index, question, "hybrid", None) == {"public.md"}


def test_a_removal_tries_the_full_text_store_though_the_vector_store_fails(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _indexed(index, tmp_path / "docs")

    def away(source_id: str) -> None:
        raise StoreUnavailableError("the Chroma server cannot be reached")

    monkeypatch.setattr(index.vector_store, "delete_source", away)
    with pytest.raises(StoreUnavailableError):
        index.remove_source("secret.md")
    assert index.fulltext_store.find_terms(["quillfeather"], None) == {"quillfeather": False}


def test_selecting_a_file_of_an_index_with_nothing_indexed_searches_that_file_only(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _indexed(index, tmp_path / "docs")
    monkeypatch.setattr(index, "indexed_source_ids", set)  # say, all being indexed again
    assert index.selection_filter([ids["public.md"]]) == [ids["public.md"]]
