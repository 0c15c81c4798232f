"""A source that is not fully indexed is never found, whatever the stores hold of it: one
whose removal, or failure's clean-up, could not reach a store, until the removal is
finished; one being indexed, until it is; one whose process was killed halfway."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.stores.base import StoreUnavailableError
from ragloom_app.db.models import SourceStatus
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.source_rows import set_status
from ragloom_app.index.file.source_steps import SourceSteps
from tests.helpers.scripted_llm import ScriptedLLM

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


@pytest.mark.parametrize("away_store", ["vector_store", "fulltext_store"])
def test_a_removal_cut_short_by_a_store_hides_the_file_from_every_search(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, away_store: str
) -> None:
    ids = _indexed(index, tmp_path / "docs")

    def away(source_id: str) -> None:
        raise StoreUnavailableError("the store's server cannot be reached")

    with monkeypatch.context() as patch:
        patch.setattr(getattr(index, away_store), "delete_source", away)
        with pytest.raises(StoreUnavailableError):
            index.remove_source("secret.md")
    statuses = {s["name"]: s["status"] for s in index.list_sources()}
    assert statuses == {"secret.md": "removing", "public.md": "indexed"}
    if away_store == "fulltext_store":  # the secret's text is still in it, to be found
        assert index.fulltext_store.find_terms(["quillfeather"], None) == {"quillfeather": True}
    question = "What is the launch password kept by the night shift?"
    for mode in ("hybrid", "vector", "fulltext"):
        # Nothing selected, and the selection of every file the user still sees, which
        # searches without a filter.
        for selected in (None, [ids["public.md"]]):
            found = _names(index, question, mode, selected)
            assert found == {"public.md"}, (mode, selected)
        # Even selected by id (the list a client had before the removal).
        assert _names(index, question, mode, [ids["secret.md"]]) == set(), mode
    # A reranking LLM (maybe a hosted one) is never shown the file's chunks either.
    judge = ScriptedLLM(replies=["yes"], repeat_last=True)
    (reranked,) = index.get_retriever_pipelines({"rerank": True, "top_k": 2, "llm": judge})
    assert {hit.chunk.source_name for hit in reranked(question)} == {"public.md"}
    shown = [message.content for prompt in judge.prompts for message in prompt]
    assert shown and not any("Quillfeather" in text for text in shown)
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


def test_a_file_being_indexed_or_cut_off_halfway_is_never_found(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its chunks are in both stores before it counts as indexed; a search then, or after
    its process was killed there (the file listed queued), finds the other files only,
    with or without a selection."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "public.md").write_text(PUBLIC)
    (docs / "secret.md").write_text(SECRET)
    (public,) = index.get_indexing_pipeline({}).run([docs / "public.md"])
    question = "What is the launch password kept by the night shift?"
    seen: list[set[str]] = []
    flip = SourceSteps._flip

    def searched_before_the_flip(self: SourceSteps, *args: object, **values: object) -> object:
        for mode in ("hybrid", "vector", "fulltext"):
            for selected in (None, [public.source_id]):
                seen.append(_names(index, question, mode, selected))
        return flip(self, *args, **values)

    monkeypatch.setattr(SourceSteps, "_flip", searched_before_the_flip)
    (secret,) = index.get_indexing_pipeline({}).run([docs / "secret.md"])
    assert secret.status == "indexed" and secret.source_id is not None
    assert seen == [{"public.md"}] * 6
    assert index.find_terms(["quillfeather"]) == {"quillfeather": True}
    # As a process killed before its flip leaves the row (listed queued).
    set_status(index.resources.engine, secret.source_id, SourceStatus.INDEXING, None)
    assert {s["name"]: s["status"] for s in index.list_sources()}["secret.md"] == "queued"
    for mode in ("hybrid", "vector", "fulltext"):
        for selected in (None, [public.source_id], [secret.source_id]):
            assert _names(index, question, mode, selected) <= {"public.md"}, (mode, selected)
    assert index.find_terms(["quillfeather"]) == {"quillfeather": False}
