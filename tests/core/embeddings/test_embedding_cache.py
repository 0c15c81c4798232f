"""Texts embedded before are not embedded again (the sentence focus's, under load)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from ragloom.embeddings import cache
from ragloom.embeddings.cache import embed_cached
from ragloom_app.testing import HashEmbeddings

BATCHES: list[list[str]] = []


class CountingEmbeddings(HashEmbeddings):
    """Hash embeddings that note every batch they are asked for (in BATCHES)."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        BATCHES.append(list(texts))
        return super().embed_documents(texts)


@pytest.fixture
def model() -> CountingEmbeddings:
    BATCHES.clear()
    return CountingEmbeddings()


def test_only_new_texts_are_embedded_and_rows_keep_their_order(model: CountingEmbeddings) -> None:
    first = embed_cached(model, ["a", "b", "a"])
    second = embed_cached(model, ["c", "b", "a"])
    assert BATCHES == [["a", "b"], ["c"]]
    assert np.array_equal(first[0], first[2]) and np.array_equal(second[1], first[1])
    assert np.allclose(second, HashEmbeddings().embed_documents(["c", "b", "a"]))


def test_the_cache_keeps_the_most_recent_and_never_a_long_text(
    model: CountingEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MAX_CACHED_TEXTS", 2)
    embed_cached(model, ["a", "b"])
    embed_cached(model, ["a"])  # a is now the most recent
    embed_cached(model, ["c"])  # b goes
    embed_cached(model, ["a", "b"])
    assert BATCHES[-1] == ["b"]
    long = "x" * (cache.MAX_CACHED_CHARS + 1)
    embed_cached(model, [long])
    embed_cached(model, [long])
    assert BATCHES[-2:] == [[long], [long]]


def test_no_texts_make_an_empty_matrix(model: CountingEmbeddings) -> None:
    assert embed_cached(model, []).shape[0] == 0


def test_a_query_is_embedded_once_for_the_search_and_the_focus(model: CountingEmbeddings) -> None:
    from ragloom.embeddings.cache import embed_query_cached

    first = embed_query_cached(model, "How hot is it?")
    again = embed_query_cached(model, "How hot is it?")
    assert np.array_equal(first, again) and BATCHES == [["How hot is it?"]]
    # Kept apart from the same text embedded as a document.
    embed_cached(model, ["How hot is it?"])
    assert len(BATCHES) == 2
