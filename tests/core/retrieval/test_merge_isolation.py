"""retrieve_from_all: a retriever that raises is left out of the search, not the question."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from ragloom.retrieval import RetrievalError, Retriever, retrieve_from_all
from ragloom.schema import Chunk, RetrievedChunk


class OneChunkRetriever(Retriever):
    """Finds one chunk, whatever the question."""

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        chunk = Chunk("c1", "The reactor runs at 451 kelvin.", "s1", "reactor.md", None, 0, 31)
        return [RetrievedChunk(chunk, 1.0, {self.name: 1.0})]


class BrokenRetriever(Retriever):
    """A retriever whose store is gone."""

    default_name = "broken"

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        raise OSError("the store at /srv/ragloom/chroma is gone")


def test_a_failing_retriever_is_left_out_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    hits = retrieve_from_all([BrokenRetriever(), OneChunkRetriever()], "reactor kelvin", 3)
    assert [hit.chunk.text for hit in hits] == ["The reactor runs at 451 kelvin."]
    (record,) = [r for r in caplog.records if r.name == "ragloom.retrieval.merge"]
    assert "broken failed; left out" in record.getMessage()
    assert record.exc_info is not None and "/srv/ragloom" in str(record.exc_info[1])


def test_every_retriever_failing_is_one_clear_error() -> None:
    with pytest.raises(RetrievalError, match="searching the documents failed") as caught:
        retrieve_from_all([BrokenRetriever(), BrokenRetriever()], "reactor", 3)
    assert isinstance(caught.value.__cause__, OSError)


def test_no_retriever_is_no_result_not_an_error() -> None:
    assert retrieve_from_all([], "reactor", 3) == []
