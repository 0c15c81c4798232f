"""LLM reranking (scripted judge for control flow, one real-model check) and the wrapper."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from theflow import Param

from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.llms.base import ChatMessage, GenerationOptions, LLMBusyError, LLMStreamItem
from ragloom.llms.llamacpp import LlamaCppChat
from ragloom.retrieval import (
    FullTextRetriever,
    HybridRetriever,
    LLMReranker,
    MMRReranker,
    RerankingRetriever,
    VectorRetriever,
    retrieve_from_all,
)
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.stores import BM25Store, ChromaVectorStore
from tests.helpers.scripted_llm import ScriptedLLM


class BusyAfterLLM(ScriptedLLM):
    """Answers its scripted replies, then fails every call: busy (as the local model is
    under load past an answer's deadline), or ``unexpected``: a RuntimeError (a bug)."""

    unexpected: bool = Param(False, help="Raise a RuntimeError, not LLMBusyError.")

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        if not self.replies:
            self.prompts.append(list(messages))
            if self.unexpected:
                raise RuntimeError("judge crashed")
            raise LLMBusyError("the model is busy: the answer's time ran out in line")
        yield from super().stream(messages, options)


def _hits(count: int) -> list[RetrievedChunk]:
    return [
        RetrievedChunk(
            Chunk(id=f"c{i}", text=f"passage number {i}", source_id="s", source_name="s.md"),
            score=1.0 / i,
        )
        for i in range(1, count + 1)
    ]


def _ids(hits: list[RetrievedChunk]) -> list[str]:
    return [h.chunk.id for h in hits]


def test_keeps_the_chunks_judged_relevant_in_their_order() -> None:
    llm = ScriptedLLM(replies=["no", "Yes.", "no", "YES it is"])
    kept = LLMReranker(llm=llm)("Which passage?", _hits(4), top_k=3)
    assert _ids(kept) == ["c2", "c4"]
    # The question comes before the passage, so the shared prefix can be reused.
    user = llm.prompts[0][1].content
    assert user.index("Question: Which passage?") < user.index("Passage: passage number 1")
    assert llm.prompts[0][0].role == "system" and "yes or no" in llm.prompts[0][0].content


def test_stops_once_top_k_are_kept() -> None:
    llm = ScriptedLLM(replies=["yes", "no", "yes", "yes", "yes"])
    kept = LLMReranker(llm=llm)("q", _hits(5), top_k=2)
    assert _ids(kept) == ["c1", "c3"]
    assert len(llm.prompts) == 3 and llm.replies == ["yes", "yes"]


def test_all_no_falls_back_to_the_original_order() -> None:
    llm = ScriptedLLM(replies=["no", "nope", "No."])
    assert _ids(LLMReranker(llm=llm)("q", _hits(3), top_k=2)) == ["c1", "c2"]


def test_judges_at_most_max_candidates() -> None:
    llm = ScriptedLLM(replies=["no", "no", "yes"])
    kept = LLMReranker(llm=llm, max_candidates=2)("q", _hits(5), top_k=2)
    assert _ids(kept) == ["c1", "c2"]  # neither judged relevant: the fallback
    assert len(llm.prompts) == 2


def test_a_top_k_above_max_candidates_is_filled_with_the_unjudged_in_order() -> None:
    # Every judged passage relevant: the 8 judged, then the next two as they came.
    llm = ScriptedLLM(replies=["yes"] * 8)
    kept = LLMReranker(llm=llm)("q", _hits(20), top_k=10)
    assert _ids(kept) == [f"c{i}" for i in range(1, 11)]
    assert len(llm.prompts) == 8
    # Those judged "no" stay out, and leave their places empty: the judge had those.
    llm = ScriptedLLM(replies=["yes", "no"] * 4)
    kept = LLMReranker(llm=llm)("q", _hits(20), top_k=10)
    assert _ids(kept) == ["c1", "c3", "c5", "c7", "c9", "c10"]
    assert len(llm.prompts) == 8
    # Within max_candidates, the unjudged never fill a place a "no" left.
    llm = ScriptedLLM(replies=["no", "yes", "no", "no", "no", "no", "no", "no"])
    assert _ids(LLMReranker(llm=llm)("q", _hits(20), top_k=3)) == ["c2"]


def test_a_judge_that_fails_leaves_the_rest_in_their_order(
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm = BusyAfterLLM(replies=["no", "yes"])
    with caplog.at_level(logging.WARNING, logger="ragloom.retrieval.rerank"):
        kept = LLMReranker(llm=llm)("q", _hits(6), top_k=3)
    # c1 judged no, c2 yes, then busy at c3: c3 and c4 follow as they came.
    assert _ids(kept) == ["c2", "c3", "c4"]
    assert len(llm.prompts) == 3  # no call after the failure
    (record,) = caplog.records
    # One line that says what happened; a busy model is no bug, so no traceback.
    assert "stopped after 2 of 6 judged" in record.getMessage()
    assert "LLMBusyError" in record.getMessage() and not record.exc_info
    # Failing at the first call keeps the search's order.
    assert _ids(LLMReranker(llm=BusyAfterLLM())("q", _hits(6), top_k=3)) == ["c1", "c2", "c3"]
    # Failing near the end after "no"s still gives top_k, as all "no" does: the unjudged
    # first, then those judged "no" in their order.
    busy_late = BusyAfterLLM(replies=["no"] * 5)
    assert _ids(LLMReranker(llm=busy_late)("q", _hits(6), top_k=3)) == ["c6", "c1", "c2"]


def test_a_judge_that_fails_unexpectedly_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm = BusyAfterLLM(replies=["no"], unexpected=True)
    with caplog.at_level(logging.WARNING, logger="ragloom.retrieval.rerank"):
        kept = LLMReranker(llm=llm)("q", _hits(4), top_k=2)
    assert _ids(kept) == ["c2", "c3"]  # the one judged no stays out
    (record,) = caplog.records
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


def test_nothing_to_judge_makes_no_call() -> None:
    llm = ScriptedLLM(replies=[])
    assert LLMReranker(llm=llm)("q", [], top_k=3) == []
    assert LLMReranker(llm=llm)("q", _hits(2), top_k=0) == []
    assert llm.prompts == []


CORPUS = [
    ("k1", "The cooling loop is flushed every 90 days by the night shift."),
    ("k2", "Every 90 days the night shift flushes the cooling loop."),
    ("k3", "The canteen serves lunch from noon; the cooling loop is not its business."),
    ("k4", "Spare pumps are kept in hall C."),
    ("k5", "The reactor runs at 451 kelvin."),
]


@pytest.fixture(scope="module")
def embeddings() -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings()


@pytest.fixture
def hybrid(tmp_path: Path, embeddings: SentenceTransformerEmbeddings) -> HybridRetriever:
    chunks = [Chunk(id=i, text=t, source_id="s", source_name="plant.md") for i, t in CORPUS]
    vectors = ChromaVectorStore("rerank_test", path=tmp_path / "chroma")
    vectors.add(chunks, embeddings.embed_documents([c.text for c in chunks]))
    terms = BM25Store(tmp_path / "bm25")
    terms.add(chunks)
    return HybridRetriever(
        retrievers=[
            VectorRetriever(store=vectors, embeddings=embeddings),
            FullTextRetriever(store=terms),
        ]
    )


def test_reranking_retriever_fetches_more_and_applies_rerankers_in_turn(
    hybrid: HybridRetriever,
) -> None:
    question = "How often is the cooling loop flushed?"
    plain = hybrid(question, top_k=5)
    llm = ScriptedLLM(replies=["yes", "no", "yes"])
    vectors = hybrid.retrievers[0].store
    retriever = RerankingRetriever(
        inner=hybrid,
        rerankers=[MMRReranker(vector_store=vectors, lambda_mult=0.5), LLMReranker(llm=llm)],
        fetch_k=5,
    )
    result = retriever(question, top_k=2)
    assert len(result) == 2
    # Each prompt asked about a candidate of the fused list, in MMR order.
    judged = [p[1].content.split("Passage: ")[1].split("\n")[0] for p in llm.prompts]
    texts = dict(CORPUS)
    assert judged[0] == texts[plain[0].chunk.id]  # MMR keeps the most relevant first
    assert [h.chunk.text for h in result] == [judged[0], judged[2]]
    # Merged hybrid hits keep both retrievers' scores through reranking.
    assert all(set(h.found_by) <= {"vector", "fulltext"} and h.found_by for h in result)
    assert retriever.name == "hybrid"


def test_a_busy_judge_still_answers_the_search_in_its_own_order(
    hybrid: HybridRetriever,
) -> None:
    question = "How often is the cooling loop flushed?"
    plain = hybrid(question, top_k=3)
    busy = RerankingRetriever(inner=hybrid, rerankers=[LLMReranker(llm=BusyAfterLLM())])
    # One index searched, as most questions are: its failure was the whole search's.
    found = retrieve_from_all([busy], question, 3)
    assert _ids(found) == _ids(plain)


def test_source_filter_reaches_the_inner_retriever(hybrid: HybridRetriever) -> None:
    retriever = RerankingRetriever(inner=hybrid, rerankers=[], fetch_k=5)
    assert retriever("cooling loop", top_k=3, source_ids=[]) == []
    assert len(retriever("cooling loop", top_k=3, source_ids=["s"])) == 3


@pytest.mark.llm
def test_the_bundled_model_judges_an_obvious_case() -> None:
    judge = LLMReranker(llm=LlamaCppChat())
    question = "At what temperature does the reactor run?"
    texts = {"pumps": "Spare pumps are kept in hall C.", "hot": "The reactor runs at 451 kelvin."}
    hits = [
        RetrievedChunk(Chunk(id=i, text=t, source_id="s", source_name="a.md"), 1.0)
        for i, t in texts.items()
    ]
    # Two grammar-constrained calls: the passage that answers is kept, the other is not.
    assert _ids(judge(question, hits, top_k=2)) == ["hot"]
