"""What kind of question this is, read from its wording alone: the ``auto`` mode's router.

:func:`classify_question` sorts a question into one of three :data:`QuestionKind`\\ s by
cues in its words, with no LLM call and no search, so that routing costs nothing and
says why it chose (the cues it matched):

- ``arithmetic``: the answer is computed from documented numbers (``how many days
  passed between``, ``in total``, ``the difference between``, ``how many bytes``,
  ``multiplied by``, a percentage *of* something);
- ``comparison``: the question names two things to look up and weigh (``both``,
  ``compare``, ``which came first``, ``earlier/later than``), or it first states what it
  is about and then asks (two sentences, or ``as of the release that ...``): a fact to
  find before the one asked for (a *bridge*);
- ``single``: anything else: one fact, found in one place.

The cues are English and deliberately few; a question they miss is ``single``, which is
the default mode's kind, so a miss costs no more than not routing at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_ROUTED_CHARS", "QuestionKind", "QuestionRoute", "classify_question"]

QuestionKind = Literal["single", "arithmetic", "comparison"]
"""How a question is answered: one fact, a computation on facts, or several facts."""

MAX_ROUTED_CHARS = 2000
"""Only this many leading characters are read (a question is shorter: the app's
``MAX_QUESTION_CHARS``); the expressions below stay linear, this bounds their cost."""

_ARITHMETIC_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        (
            "how many units passed between",
            r"\bhow (?:many|much) (?:\w+ ){0,2}(?:passed|elapsed|went by|separate[sd]?)\b",
        ),
        (
            "how many units between",
            r"\bhow many (?:days|weeks|months|years|hours|minutes|seconds)\b[^?]*\bbetween\b",
        ),
        ("in total", r"\b(?:in total|in all|altogether|combined|added together)\b"),
        ("sum or difference", r"\b(?:the )?(?:sum|difference|product|ratio) (?:of|between)\b"),
        ("multiplied or divided", r"\b(?:multiplied|divided) by\b|\btimes as (?:many|much)\b"),
        ("how many bytes", r"\bhow many (?:bytes|kilobytes|megabytes|bits)\b"),
        ("a percentage of", r"\b\d+(?:\.\d+)?\s?(?:%|per ?cent) of\b"),
    )
)

_COMPARISON_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("both", r"\bboth\b"),
        ("compare", r"\bcompar(?:e|ed|es|ing|ison)\b|\bversus\b|\bvs\.?\s"),
        ("which came first", r"\bwhich (?:came|was|is|happened) (?:first|earlier|later)\b"),
        ("earlier or later than", r"\b(?:earlier|later|older|newer|before|after) than\b"),
        (
            "as of the one that",
            r"\b(?:as of|since|in|at the time of) the (?:\w+ ){0,2}"
            r"(?:release|version|year|day|time|one) (?:that|which|when)\b",
        ),
    )
)

# A question that first says what it is about, then asks: "The X page does Y. Which ...?"
# (a sentence end followed by another sentence before the question mark).
# A sentence ends after a word of two letters or more, so "D. Richard Hipp" is no end.
_CONTEXT_THEN_QUESTION = re.compile(r"(?<=[a-z\d)\]'\"]{2})[.!]\s+[A-Z][^.!?]*\?\s*$")


@dataclass(frozen=True)
class QuestionRoute:
    """What :func:`classify_question` found: the ``kind`` and the ``cues`` that decided it
    (their names, in the order tried; none for ``single``), and ``reason`` in words for
    the trace."""

    kind: QuestionKind
    cues: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """Why, in words: ``arithmetic: "in total"`` or ``single: no cue of another kind``."""
        if not self.cues:
            return f"{self.kind}: no cue of another kind"
        return f"{self.kind}: " + ", ".join(f'"{cue}"' for cue in self.cues)


def _matched(cues: tuple[tuple[str, re.Pattern[str]], ...], text: str) -> tuple[str, ...]:
    return tuple(name for name, pattern in cues if pattern.search(text))


def classify_question(question: str) -> QuestionRoute:
    """The kind of ``question`` by its wording: arithmetic cues first (a computation over
    two facts is arithmetic, not a comparison), then comparison cues, else ``single``."""
    text = " ".join(question[:MAX_ROUTED_CHARS].split())
    arithmetic = _matched(_ARITHMETIC_CUES, text)
    if arithmetic:
        return QuestionRoute("arithmetic", arithmetic)
    comparison = _matched(_COMPARISON_CUES, text)
    if _CONTEXT_THEN_QUESTION.search(text):
        comparison += ("context, then the question",)
    if comparison:
        return QuestionRoute("comparison", comparison)
    return QuestionRoute("single")
