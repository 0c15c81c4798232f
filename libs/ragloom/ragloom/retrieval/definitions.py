"""The definition prior: the passage that defines a name the question asks about comes first.

In technical documentation a name (``cache_size``, ``sqlite3_randomness()``,
``SQLITE_THREADSAFE``, ``.recover``) is mentioned on many pages (changelogs, indexes, other
pages' prose) and defined on one. Both retrievers rank by what a passage shares with the
question, so a changelog line that mentions the name with another value can outrank its
reference page. What sets the definition apart is structure, not the file's name: there the
name stands in a **label line** (a heading, a definition-list term, a signature or a table
row, which the HTML reader keeps as lines of their own), and the passage also explains it
in prose. So a passage *defines* a name when:

- the name occurs, as a whole word and in any case, in a label line: at most
  ``max_line_words`` words, not ending like a sentence (``.``, ``!``, ``?``), and
- the passage has a line of prose: longer than that, or ending like a sentence.

The second rule leaves out index pages and link lists, whose lines are all labels; a
changelog mentions names inside its items' sentences, which are not labels.

Names are the code-like tokens of the question: ``name()`` calls, ``snake_case`` and
``UPPER_CASE`` words with an underscore (``-DNAME`` gives ``NAME``), ``camelCase`` words,
and dot-commands (``.recover``). A question without one is searched exactly as without the prior.

The prior is one more vote in reciprocal-rank fusion: a passage at rank ``r`` of the fused
list that defines names scores ``1 / (k + r) + weight / (k + d)``, ``d`` its rank among the
defining passages (most names defined first); others score ``1 / (k + r)``.
:class:`~ragloom.retrieval.hybrid.HybridRetriever` applies it (``prior``) to every
candidate its retrievers found before it keeps the ``top_k`` best, so it costs no extra
search; only the order changes, scores and ``found_by`` stay the retrievers'.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from theflow import Param

from ragloom.retrieval.rerank import Reranker
from ragloom.schema import RetrievedChunk

__all__ = [
    "MAX_DEFINING_LINE_WORDS",
    "MAX_QUESTION_NAMES",
    "DefinitionPrior",
    "code_names",
    "defined_names",
    "is_label_line",
]

MAX_DEFINING_LINE_WORDS = 12
"""Words a label line may have (a signature, a term, a heading, a table row)."""

MAX_QUESTION_NAMES = 8
"""Names looked for per question: a pasted stack trace must not cost a regex per token."""

_NAME = re.compile(
    r"(?<![\w.])\.[a-z][a-z_]+\b"  # a dot-command: .recover
    r"|(?<=-D)[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"  # a macro set by -DNAME=1
    r"|(?<!-)\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"  # snake_case, UPPER_CASE
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"  # camelCase: xRandomness
    r"|\b[A-Za-z]\w*(?=\(\))"  # a call: carray()
)
_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s*$")


def code_names(question: str) -> list[str]:
    """The code-like names of ``question``, in order, each once (at most a few)."""
    names: list[str] = []
    for match in _NAME.finditer(question):
        name = match.group()
        if name.lower() not in (n.lower() for n in names):
            names.append(name)
            if len(names) >= MAX_QUESTION_NAMES:
                break
    return names


def is_label_line(line: str, max_words: int = MAX_DEFINING_LINE_WORDS) -> bool:
    """Whether ``line`` is a label: at most ``max_words`` words, not ending like a sentence."""
    return len(_WORD.findall(line)) <= max_words and not _SENTENCE_END.search(line)


def defined_names(
    text: str, names: Sequence[str], max_line_words: int = MAX_DEFINING_LINE_WORDS
) -> int:
    """How many of ``names`` the passage ``text`` defines (see the module)."""
    lowered = text.lower()
    present = [name for name in names if name.lower() in lowered]
    if not present:  # most candidates: no line needs reading
        return 0
    labels: list[str] = []
    prose = False
    for line in text.split("\n"):
        if is_label_line(line, max_line_words):
            labels.append(line)
        else:
            prose = True
    if not prose or not labels:
        return 0
    lines = "\n".join(labels)
    return sum(
        1
        for name in present
        if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", lines, re.IGNORECASE)
    )


class DefinitionPrior(Reranker):
    """Orders passages with the definition prior (see the module); returns ``top_k``."""

    weight: float = Param(1.0, help="The prior's vote, against 1 for the retriever's rank.")
    rrf_k: int = Param(60, help="RRF constant k in 1 / (k + rank).")
    max_line_words: int = Param(
        MAX_DEFINING_LINE_WORDS, help="Words a line may have and still define a name."
    )

    def run(self, query: str, hits: Sequence[RetrievedChunk], top_k: int) -> list[RetrievedChunk]:
        """``hits`` with the passages that define the question's names moved up."""
        names = code_names(query)
        if not names:
            return list(hits[:top_k])
        k = self.rrf_k
        defined = [defined_names(h.chunk.text, names, self.max_line_words) for h in hits]
        definers = sorted((i for i, n in enumerate(defined) if n), key=lambda i: -defined[i])
        score = [1.0 / (k + rank) for rank in range(1, len(hits) + 1)]
        for rank, i in enumerate(definers, start=1):
            score[i] += self.weight / (k + rank)
        order = sorted(range(len(hits)), key=lambda i: (-score[i], i))
        return [hits[i] for i in order[:top_k]]
