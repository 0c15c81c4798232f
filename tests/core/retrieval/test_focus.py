"""Sentence focus: the sentences of retrieved passages nearest a query, with neighbours."""

from collections.abc import Sequence

import numpy as np
import pytest

from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.embeddings.base import Embeddings
from ragloom.retrieval import SentenceFocus
from ragloom.retrieval.focus import _leads, focused_text, merge_spans
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.splitters import sentence_spans

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


# A definition as the HTML reader writes it: the term on its own line, then its description.
DEFINITION = (
    "SQLITE_CONFIG_SERIALIZED\n"
    "There are no arguments to this option. It sets the threading mode. "
    "In serialized mode, API calls to database connections are serialized with mutexes."
    "\n\nThe garden has forty rose bushes. Bees from three hives pollinate them."
)


def test_a_kept_sentence_keeps_the_term_it_defines(
    embeddings: SentenceTransformerEmbeddings,
) -> None:
    focus = SentenceFocus(embeddings=embeddings, sentences=1, neighbours=0)
    (spans,) = focus.run("Are API calls serialized with mutexes?", _hits(DEFINITION))
    assert focused_text(DEFINITION, spans) == (
        "SQLITE_CONFIG_SERIALIZED\nThere are no arguments to this option. … "
        "In serialized mode, API calls to database connections are serialized with mutexes. …"
    )


def test_only_a_paragraph_that_starts_with_a_label_has_a_lead() -> None:
    # One-line paragraphs and paragraphs that start with a sentence have no label to keep.
    text = "One here. Two.\n\nA sentence ends here.\nAnother line. Third.\n\nTerm\nIts text. More."
    assert _leads(text, sentence_spans(text)) == [None, None, None, None, None, 5, 5]


def test_a_signature_is_one_sentence_with_its_heading(
    embeddings: SentenceTransformerEmbeddings,
) -> None:
    text = (
        "Pseudo-Random Number Generator\nvoid sqlite3_randomness(\n  int N,\n  void *P\n);\n\n"
        "A call to this routine stores N bytes of randomness into buffer P. "
        "The garden has forty rose bushes."
    )
    focus = SentenceFocus(embeddings=embeddings, sentences=1, neighbours=0)
    (spans,) = focus.run("What arguments does sqlite3_randomness take?", _hits(text))
    assert focused_text(text, spans).startswith(
        "Pseudo-Random Number Generator\nvoid sqlite3_randomness(\n  int N,\n  void *P\n);"
    )
