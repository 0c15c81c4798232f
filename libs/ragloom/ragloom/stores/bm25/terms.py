"""Whether terms occur in a BM25 store at all: its vocabulary, then, for a phrase, its words
in order in one of the chunks holding all of them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from ragloom.stores.bm25.index import SegmentedBM25
from ragloom.stores.bm25.tokenizer import tokenize
from ragloom.stores.bm25.vocab import TermVocabulary

__all__ = ["MAX_LOOKUP_TERMS", "MAX_PHRASE_CANDIDATES", "find_terms", "holds_in_order"]

MAX_LOOKUP_TERMS = 64
"""Most terms one lookup answers; those past it are answered None (not known)."""

MAX_PHRASE_CANDIDATES = 50
"""Most chunks whose text is read to find a phrase's words in order. A phrase whose words
share more chunks than this and are in order in none of those read is answered True: it
cannot be ruled out without reading more."""


def holds_in_order(terms: Sequence[str], words: Sequence[str]) -> bool:
    """``words`` occur one after the other in ``terms`` (both as :func:`tokenize` gives)."""
    n, wanted = len(words), list(words)
    return n > 0 and any(
        terms[i] == wanted[0] and list(terms[i : i + n]) == wanted
        for i in range(len(terms) - n + 1)
    )


def find_terms(
    index: SegmentedBM25,
    vocab: TermVocabulary,
    texts_of: Callable[[list[str]], Sequence[str]],
    terms: Sequence[str],
    source_ids: Collection[str] | None = None,
) -> dict[str, bool | None]:
    """For each of ``terms``: does a live chunk (of ``source_ids``, if given) hold it?

    A term is tokenized as the store tokenizes chunks (``sqlite3_vfs`` is one term,
    ``3.41.0`` three). One word: found if the vocabulary has it with a live chunk. Several:
    found if one chunk holds them all, in order (read from ``texts_of``, which gives the
    texts of chunk ids, at most :data:`MAX_PHRASE_CANDIDATES` of them). A term with no
    word the store indexes (only stopwords) is answered None.
    """
    found: dict[str, bool | None] = {}
    for number, term in enumerate(dict.fromkeys(terms)):
        words = tokenize(term)
        if number >= MAX_LOOKUP_TERMS or not words:
            found[term] = None
            continue
        ids = [vocab.ids.get(word, -1) for word in words]
        if any(index.document_frequency(i) == 0 for i in ids):
            found[term] = False
        elif len(words) == 1 and source_ids is None:
            found[term] = True
        else:
            holders = index.holding_all(ids, source_ids)
            if not holders or len(words) == 1:
                found[term] = bool(holders)
            else:
                read = holders[:MAX_PHRASE_CANDIDATES]
                ordered = any(holds_in_order(tokenize(text), words) for text in texts_of(read))
                found[term] = ordered or len(holders) > len(read)
    return found
