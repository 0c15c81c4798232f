"""Before answering: decline, without the model, a question whose specifics the documents lack.

A question naming something specific (``timediff()``, ``PRAGMA journal_mode=wal2``,
``3.41.0``: :func:`~ragloom.qa.specifics.specific_terms`) is declined when

- a strict specific (an identifier, option, version, quoted phrase or name) occurs in no
  readable index (``missing``), or
- (when asked: ``in_passages``) it names strict specifics the indices may hold, but the
  retrieved passages hold none of them (``not_in_passages``): the model would answer from
  passages about something else.

The decline says what is missing ("The documents do not mention `timediff()`.") and cites
the closest passages, so the evidence panel shows what was found. Numbers and lower-case
rare words are not looked up (documents write them in other ways); an index that cannot
tell (``None``) never makes a term missing. The rule and its figures on the SQLite set
are in docs/reasoning-modes.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence

from ragloom.events import (
    AnswerDelta,
    Citation,
    CitationsFound,
    Event,
    QuestionCheck,
    StepFinished,
    StepStarted,
)
from ragloom.qa.citations import citation_of
from ragloom.qa.specifics import SpecificTerm, specific_terms
from ragloom.schema import RetrievedChunk
from ragloom.stores.bm25.terms import holds_in_order
from ragloom.stores.bm25.tokenizer import tokenize

__all__ = [
    "MAX_SHOWN_TERM_CHARS",
    "PRECHECK_LABEL",
    "PRECHECK_STEP",
    "TermLookup",
    "check_question",
    "decline_text",
    "merge_lookups",
    "stream_decline",
    "stream_precheck",
]

TermLookup = Callable[[Sequence[str]], Mapping[str, bool | None]]
"""Whether terms occur in the readable indices: True, False, or None (cannot tell)."""

PRECHECK_STEP = "precheck"
PRECHECK_LABEL = "Checking the question's terms against the documents"

MAX_SHOWN_TERM_CHARS = 60
"""A term longer than this is cut (with …) where the decline names it."""


def merge_lookups(
    answers: Sequence[Mapping[str, bool | None]], terms: Sequence[str]
) -> dict[str, bool | None]:
    """One answer from several indices' : found in any is True; else unknown in any is None;
    else (every index said no) False. No index at all: None."""
    merged: dict[str, bool | None] = {}
    for term in terms:
        said = [answer.get(term) for answer in answers]
        if any(s is True for s in said):
            merged[term] = True
        elif not said or any(s is None for s in said):
            merged[term] = None
        else:
            merged[term] = False
    return merged


def _state(term: SpecificTerm, found: Mapping[str, bool | None]) -> bool | None:
    """Found if any of its lookups is; missing only if every lookup is known missing."""
    said = [found.get(key) for key in term.lookups]
    if any(s is True for s in said):
        return True
    return False if said and all(s is False for s in said) else None


def _in_passages(term: SpecificTerm, passages: Sequence[list[str]]) -> bool:
    return any(holds_in_order(terms, tokenize(key)) for key in term.lookups for terms in passages)


def check_question(
    question: str,
    retrieved: Sequence[RetrievedChunk],
    find_terms: TermLookup | None,
    in_passages: bool = False,
) -> QuestionCheck:
    """What the documents (and, with ``in_passages``, the retrieved passages) hold of
    ``question``'s specifics.

    ``in_passages`` is off by default: a question needing two pages names on one the
    entity found on the other, and an answering passage need not repeat the name asked
    about (1 of 34 answerable SQLite questions declined wrongly, no near miss caught
    besides; docs/reasoning-modes.md).
    """
    looked_up = [t for t in specific_terms(question) if t.strict]
    if not looked_up:
        return QuestionCheck()
    keys = list(dict.fromkeys(key for term in looked_up for key in term.lookups))
    found = dict(find_terms(keys)) if find_terms is not None else {}
    missing = [t for t in looked_up if _state(t, found) is False]
    strict = [t for t in looked_up if t not in missing]
    not_in_passages: list[SpecificTerm] = []
    if in_passages and strict and not missing:
        passages = [tokenize(item.chunk.text) for item in retrieved]
        if not any(_in_passages(t, passages) for t in strict):
            not_in_passages = strict
    return QuestionCheck(
        terms=[t.text for t in looked_up],
        missing=[t.text for t in missing],
        not_in_passages=[t.text for t in not_in_passages],
        declined=bool(missing or not_in_passages),
    )


def _shown(term: str) -> str:
    """``term`` as code in markdown: backticks and line breaks taken out, long ones cut."""
    text = " ".join(term.replace("`", "'").split())
    if len(text) > MAX_SHOWN_TERM_CHARS:
        text = text[: MAX_SHOWN_TERM_CHARS - 1] + "…"
    return f"`{text}`"


def _listed(terms: Sequence[str]) -> str:
    shown = [_shown(t) for t in terms]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def decline_text(check: QuestionCheck, passages: int) -> str:
    """The answer of a declined question: what is missing, then the closest passages."""
    if check.missing:
        text = f"The documents do not mention {_listed(check.missing)}."
    else:
        text = f"None of the passages found mentions {_listed(check.not_in_passages)}."
    if passages:
        marks = ", ".join(f"[{n}]" for n in range(1, passages + 1))
        text += f" The closest passages found: {marks}."
    return text


def _closest(retrieved: Sequence[RetrievedChunk]) -> list[Citation]:
    citations: list[Citation] = []
    seen: set[str] = set()
    for item in retrieved:
        if item.chunk.id not in seen:
            seen.add(item.chunk.id)
            citations.append(citation_of(len(citations) + 1, item))
    return citations


def stream_precheck(
    question: str,
    retrieved: Sequence[RetrievedChunk],
    find_terms: TermLookup | None,
    in_passages: bool = False,
) -> Generator[Event, None, QuestionCheck]:
    """The ``precheck`` step (started, then finished with the :class:`QuestionCheck` as its
    output) of :func:`check_question`; returns the check."""
    started = time.perf_counter()
    yield StepStarted(PRECHECK_STEP, {"question": question}, label=PRECHECK_LABEL)
    check = check_question(question, retrieved, find_terms, in_passages)
    yield StepFinished(
        PRECHECK_STEP, time.perf_counter() - started, output=check, label=PRECHECK_LABEL
    )
    return check


def stream_decline(check: QuestionCheck, retrieved: Sequence[RetrievedChunk]) -> Iterator[Event]:
    """The answer of a declined question, with the closest passages as its citations."""
    citations = _closest(retrieved)
    yield AnswerDelta(decline_text(check, len(citations)))
    yield CitationsFound(citations)
