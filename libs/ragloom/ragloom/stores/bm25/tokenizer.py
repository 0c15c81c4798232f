"""The terms BM25 indexes: folded words minus stopwords; scripts written without spaces
(CJK, Thai, Lao, Khmer, Myanmar) as bigrams of their units."""

from __future__ import annotations

import bm25s.stopwords

from ragloom.words import terms

__all__ = ["TOKENIZER_VERSION", "query_terms", "tokenize"]

#: Stored with the term ids; change it whenever :func:`tokenize` changes, so stores re-tokenize.
#: 2: words keep their combining marks (Devanagari vowel signs, ...), optional marks
#: (Arabic harakat, İ's dot) are dropped, Thai, Lao, Khmer and Myanmar become bigrams.
TOKENIZER_VERSION = 2

# bm25s's copy of Lucene's English list (33 words). These occur in nearly every chunk, so
# they add almost nothing to a score but make every query touch every chunk, and a
# question ("what is the ... of the ...") is full of them. The list is kept small on
# purpose: longer lists (NLTK's) drop words such as "how", "most" or "after" that matter.
_STOPWORDS = frozenset(bm25s.stopwords.STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BM25 terms (:func:`ragloom.words.terms`).

    Words with their combining marks, folded (NFKC, case-folded, full-width Latin made
    ASCII, Arabic vowel marks dropped), minus English stopwords. A run of a script written
    without spaces becomes overlapping bigrams of its units ("加速器" -> "加速", "速器";
    "ไทย" -> "ไท", "ทย"; "เป็น" -> "เป็", "ป็น", a tone mark kept with its consonant), a
    lone unit a unigram: the usual choice of Lucene's CJK analyser, needing no dictionary.
    """
    return terms(text, _STOPWORDS)


def query_terms(question: str) -> list[str]:
    """The distinct terms of ``question``, in order: a term repeated in a question counts
    once, its weight coming from the chunks."""
    return list(dict.fromkeys(tokenize(question)))
