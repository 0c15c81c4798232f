"""Sentence focus: the sentences of retrieved passages nearest a query, with neighbours."""

from collections.abc import Sequence

import numpy as np
import pytest

from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.embeddings.base import Embeddings
from ragloom.retrieval import SentenceFocus
from ragloom.retrieval.focus import focused_text, merge_spans
from ragloom.schema import Chunk, RetrievedChunk

REACTOR = (
    "The plant was opened by the mayor in 1990. Its canteen serves soup on Fridays. "
    "The Zorblax reactor runs at 451 kelvin. Cooling water comes from the river. "
    "Visitors must wear a badge."
)
GARDEN = "The garden has forty rose bushes. Bees from three hives pollinate them."


def _hits(*texts: str) -> list[RetrievedChunk]:
    return [
        RetrievedChunk(Chunk(f"c{n}", text, f"s{n}", f"doc{n}.txt"), 1.0 / n)
        for n, text in enumerate(texts, 1)
    ]


@pytest.fixture(scope="module")
def embeddings() -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings()


def test_focused_text_marks_what_was_left_out() -> None:
    text = "One. Two. Three. Four."
    assert focused_text(text, ((5, 9),)) == "… Two. …"
    assert focused_text(text, ((0, 4), (5, 9))) == "One. Two. …"
    assert focused_text(text, ((0, 4), (17, 22))) == "One. … Four."
    assert merge_spans(((5, 9),), ((0, 4), (5, 9))) == ((0, 4), (5, 9))


def test_the_nearest_sentence_is_kept_with_its_neighbours(
    embeddings: SentenceTransformerEmbeddings,
) -> None:
    hits = _hits(REACTOR, GARDEN)
    focus = SentenceFocus(embeddings=embeddings, sentences=1, neighbours=1)
    spans = focus.run("How hot does the reactor run, in kelvin?", hits)
    assert focused_text(REACTOR, spans[0]) == (
        "… Its canteen serves soup on Fridays. The Zorblax reactor runs at 451 kelvin. "
        "Cooling water comes from the river. …"
    )
    assert spans[1] == ()  # nothing of the garden is near the question


def test_sentences_are_chosen_over_all_passages(embeddings: SentenceTransformerEmbeddings) -> None:
    hits = _hits(REACTOR, GARDEN)
    focus = SentenceFocus(embeddings=embeddings, sentences=2, neighbours=0)
    spans = focus.run("reactor temperature and rose bushes", hits)
    assert focused_text(REACTOR, spans[0]) == "… The Zorblax reactor runs at 451 kelvin. …"
    assert focused_text(GARDEN, spans[1]) == "The garden has forty rose bushes. …"


class _BrokenEmbeddings(Embeddings):
    dimension = 3
    max_tokens = 8

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("the model file is gone")

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_a_failing_embedding_model_shows_whole_passages(
    caplog: pytest.LogCaptureFixture,
) -> None:
    focus = SentenceFocus(embeddings=_BrokenEmbeddings())
    assert focus.run("reactor", _hits(REACTOR, GARDEN)) == [None, None]
    assert "the model file is gone" in caplog.text
