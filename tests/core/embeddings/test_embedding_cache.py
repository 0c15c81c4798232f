"""Texts embedded before are not embedded again (the sentence focus's, under load)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import cast

import numpy as np
import pytest

from ragloom.embeddings import Embeddings, cache
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


class GatedEmbeddings:
    """Counting hash embeddings whose first batch waits until ``release`` is set (and then
    fails, if ``fail``)."""

    def __init__(self, fail: bool = False) -> None:
        self.model = CountingEmbeddings()
        self.started, self.release, self.fail = threading.Event(), threading.Event(), fail

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not self.started.is_set():
            self.started.set()
            assert self.release.wait(10)
            if self.fail:
                raise RuntimeError("the model failed")
        return self.model.embed_documents(texts)


def _in_thread(model: GatedEmbeddings, texts: list[str], into: list[object]) -> threading.Thread:
    def run() -> None:
        try:
            into.append(embed_cached(cast(Embeddings, model), texts))
        except Exception as exc:
            into.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.fixture
def waiting(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once a call starts to wait for a text another call is embedding."""
    started_waiting = threading.Event()

    class NotedFuture(Future):  # type: ignore[type-arg]
        def result(self, timeout: float | None = None) -> np.ndarray:
            if not self.done():
                started_waiting.set()
            return super().result(timeout)  # type: ignore[no-any-return]

    monkeypatch.setattr(cache, "Future", NotedFuture)
    return started_waiting


def test_a_text_another_call_is_embedding_is_waited_for_not_embedded_again(
    waiting: threading.Event,
) -> None:
    BATCHES.clear()
    model = GatedEmbeddings()
    first: list[object] = []
    thread = _in_thread(model, ["shared", "mine"], first)
    assert model.started.wait(10)  # the first call is embedding "shared" now

    second: list[object] = []
    waiter = _in_thread(model, ["theirs", "shared"], second)
    assert waiting.wait(10)  # the second call waits for "shared"...
    assert BATCHES == [["theirs"]]  # ...having embedded only what nobody else was
    model.release.set()
    thread.join(10)
    waiter.join(10)

    assert sorted(BATCHES) == [["shared", "mine"], ["theirs"]]  # "shared" once
    assert np.allclose(first[0], HashEmbeddings().embed_documents(["shared", "mine"]))  # type: ignore[arg-type]
    assert np.allclose(second[0], HashEmbeddings().embed_documents(["theirs", "shared"]))  # type: ignore[arg-type]


def test_when_the_embedding_fails_the_waiters_fail_too_and_a_later_call_tries_again(
    waiting: threading.Event,
) -> None:
    BATCHES.clear()
    model = GatedEmbeddings(fail=True)
    first: list[object] = []
    thread = _in_thread(model, ["shared"], first)
    assert model.started.wait(10)
    second: list[object] = []
    waiter = _in_thread(model, ["shared"], second)
    assert waiting.wait(10)
    model.release.set()
    thread.join(10)
    waiter.join(10)

    assert [str(outcome) for outcome in first] == ["the model failed"]
    assert [str(outcome) for outcome in second] == [
        "embedding a text failed in another request: the model failed"
    ]
    again = embed_cached(cast(Embeddings, model), ["shared"])
    assert np.allclose(again, HashEmbeddings().embed_documents(["shared"]))
