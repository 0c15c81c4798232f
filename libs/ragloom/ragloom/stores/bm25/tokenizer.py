"""The terms BM25 indexes: case-folded words minus stopwords, CJK as character bigrams."""

from __future__ import annotations

import re
import unicodedata

import bm25s.stopwords

__all__ = ["TOKENIZER_VERSION", "query_terms", "tokenize"]

#: Stored with the term ids; change it whenever :func:`tokenize` changes, so stores re-tokenize.
TOKENIZER_VERSION = 1

# Scripts written without spaces between words: Han, Hiragana, Katakana (with its
# extensions and halfwidth forms), Hangul, and the ideographic marks 々 and 〇.
_CJK = (
    "\u1100-\u11ff\u3005\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
_HAS_CJK = re.compile(f"[{_CJK}]")
_WORD = re.compile(f"[^\\W{_CJK}]+")
_WORD_OR_CJK_RUN = re.compile(f"([{_CJK}]+)|[^\\W{_CJK}]+")
# bm25s's copy of Lucene's English list (33 words). These occur in nearly every chunk, so
# they add almost nothing to a score but make every query touch every chunk, and a
# question ("what is the ... of the ...") is full of them. The list is kept small on
# purpose: longer lists (NLTK's) drop words such as "how", "most" or "after" that matter.
_STOPWORDS = frozenset(bm25s.stopwords.STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BM25 terms.

    NFKC-normalised (full-width Latin becomes ASCII) and case-folded; words are runs of
    Unicode word characters minus English stopwords. CJK runs have no spaces to split on,
    so they become overlapping character bigrams ("加速器" -> "加速", "速器"), a lone CJK
    character a unigram: the usual choice of Lucene's CJK analyser, needing no dictionary.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    if _HAS_CJK.search(text) is None:  # fast path: one regex pass
        return [w for w in _WORD.findall(text) if w not in _STOPWORDS]
    terms: list[str] = []
    for match in _WORD_OR_CJK_RUN.finditer(text):
        run = match.group(1)
        if run is None:
            if match.group(0) not in _STOPWORDS:
                terms.append(match.group(0))
        elif len(run) == 1:
            terms.append(run)
        else:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


def query_terms(question: str) -> list[str]:
    """The distinct terms of ``question``, in order: a term repeated in a question counts
    once, its weight coming from the chunks."""
    return list(dict.fromkeys(tokenize(question)))
