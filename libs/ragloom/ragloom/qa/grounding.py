"""After answering: check every specific claim against the passages it cites, no LLM call.

:func:`check_grounding` splits an answer into sentences, finds each sentence's specifics
(numbers, versions, identifiers, options, quoted phrases: :mod:`ragloom.qa.claims`) and
looks each up in the passages the sentence cites. A sentence that cites nothing is
checked against every passage the answer cites (a small model often cites once, for the
whole answer). A specific the question names, or a tool's result holds (a calculator's),
counts as found too; a number only the question names, only in a sentence that states
something else its sources hold and the question does not (not one echoing a leading
question).
:func:`ground_answer` is the policy every built-in mode's answer goes through
(:func:`ragloom.qa.answer.cite_answer`): it reports, and replaces an answer none of whose
claims are found by a decline that lists the closest passages.

What it does not catch: a claim without specifics ("it is fast"), a wrong sense of a
number that does occur in the passage, a number the model computed itself, and a fact
written in plain words. Its cost is bounded by :class:`GroundingLimits`.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ragloom.events import AnswerRevised, Citation, Event, GroundingChecked
from ragloom.grounding_report import GroundingReport, GroundingStatus, SentenceSupport
from ragloom.qa.citations import (
    EvidenceBlock,
    citations_for,
    cited_numbers,
    cited_sentences,
    content_words,
    split_sentences,
    strip_citations,
)
from ragloom.qa.claims import TextHolder, claims_of

__all__ = [
    "DECLINE_PASSAGES",
    "MAX_ATTRIBUTED_PASSAGES",
    "MAX_GROUNDED_ANSWER_CHARS",
    "MAX_GROUNDED_PASSAGE_CHARS",
    "MAX_GROUNDED_SENTENCES",
    "MAX_SPECIFICS_PER_SENTENCE",
    "UNSUPPORTED_ANSWER",
    "GroundingCheck",
    "GroundingLimits",
    "attribute_by_specifics",
    "check_grounding",
    "decline_for",
    "ground_answer",
    "should_decline",
]

MAX_GROUNDED_SENTENCES = 60
"""Most sentences of one answer checked (a built-in mode writes two to four); the rest
are counted in ``GroundingReport.unchecked_sentences`` and the answer is at best partly
supported."""
MAX_SPECIFICS_PER_SENTENCE = 30
"""Most specifics of one sentence checked; a sentence with more is never supported (the
rest are counted in ``SentenceSupport.unchecked``)."""
MAX_GROUNDED_ANSWER_CHARS = 20_000
"""Most characters of an answer checked (the built-in modes write at most 384 tokens);
sentences past them count as unchecked."""
MAX_GROUNDED_PASSAGE_CHARS = 50_000
"""Most characters of one passage, the question or a tool's result searched; a specific
only past them is not found. A built-in chunk is about 1,000 characters."""
DECLINE_PASSAGES = 3
MAX_ATTRIBUTED_PASSAGES = 3
"""Most passages :func:`attribute_by_specifics` cites for one sentence."""
"""How many of the closest passages a decline lists when the answer cited none."""
UNSUPPORTED_ANSWER = "The documents I found do not support an answer: {reason}."
"""The decline an answer becomes when none of its specific claims is found."""


@dataclass(frozen=True)
class GroundingLimits:
    """The bounds of one check (see the module's constants)."""

    max_sentences: int = MAX_GROUNDED_SENTENCES
    max_specifics: int = MAX_SPECIFICS_PER_SENTENCE
    max_answer_chars: int = MAX_GROUNDED_ANSWER_CHARS
    max_passage_chars: int = MAX_GROUNDED_PASSAGE_CHARS


@dataclass(frozen=True)
class GroundingCheck:
    """What checking one answer needs besides its text and citations: the question, and
    the limits. ``other_sources`` are further texts whose specifics count as found: the
    results of tools that found no document (a calculator's), and Ragloom's own words
    in the answer (ReAct's "I could not finish within 5 steps"). ``own_words`` are those
    of Ragloom's own words: no passage is cited for their specifics either (a tool's
    result may restate a passage, which is then cited)."""

    question: str
    other_sources: tuple[str, ...] = ()
    limits: GroundingLimits = field(default_factory=GroundingLimits)
    own_words: tuple[str, ...] = ()


def _sentence_support(
    text: str,
    cited: list[int],
    passages: Mapping[int, TextHolder],
    question: TextHolder | None,
    others: Sequence[TextHolder],
    limits: GroundingLimits,
) -> SentenceSupport:
    claims, more = claims_of(strip_citations(text), limits.max_specifics)
    checked = [n for n in cited if n in passages] if cited else list(passages)
    unsupported: list[str] = []
    supported_by: set[int] = set()
    found_elsewhere = False  # in a tool's result
    named_numbers: list[str] = []  # numbers only the question holds
    states_sources = False  # a specific its passages hold that the question does not name
    for claim in claims:
        holding = [n for n in checked if any(passages[n].holds(k) for k in claim.keys)]
        supported_by.update(holding)
        if holding:
            asked = question is not None and any(question.holds(k) for k in claim.keys)
            states_sources = states_sources or not asked
            continue
        if any(o.holds(k) for o in others for k in claim.keys):
            found_elsewhere = True
        elif question is not None and any(question.holds(k) for k in claim.keys):
            if claim.specific.kind == "number":
                named_numbers.append(claim.specific.text)
        else:
            unsupported.append(claim.specific.text)
    if passages and not states_sources and not found_elsewhere:
        # A number is taken from the question only by a sentence that also states what
        # its sources hold and the question does not name: "Yes, the X-200 is rated to
        # 900 kelvin [1]" repeats a leading question's name and number over a passage
        # saying 451, where "No, it is 451, not 900" holds 451. (Names and versions need
        # not: the precheck looks them up.)
        unsupported += named_numbers
    return SentenceSupport(
        text=text,
        supported=bool(passages) and not unsupported and not more,
        specifics=[claim.specific for claim in claims],
        unsupported=unsupported,
        cited=list(cited),
        supported_by=sorted(supported_by),
        unchecked=more,
    )


def _status(sentences: Sequence[SentenceSupport], unchecked: int, cites: bool) -> GroundingStatus:
    if not cites:
        return "no_citations"
    if unchecked == 0 and all(s.supported for s in sentences):
        return "supported"
    if any(s.supported and s.checked for s in sentences):
        return "partly"
    if unchecked and not any(s.unsupported or s.unchecked for s in sentences):
        return "partly"  # nothing found wrong, but not everything was looked at
    return "unsupported"


def check_grounding(
    answer: str,
    passages: Mapping[int, str],
    question: str = "",
    other_sources: Sequence[str] = (),
    limits: GroundingLimits | None = None,
) -> GroundingReport:
    """How well ``passages`` (the cited ones, by their ``[n]``) support ``answer``; a
    specific that ``question`` or one of ``other_sources`` holds counts as found.

    Pure string work, bounded by ``limits``: never raises on any text."""
    limits = limits or GroundingLimits()
    cut = limits.max_passage_chars
    holders = {number: TextHolder(text[:cut]) for number, text in passages.items()}
    asked = TextHolder(question[:cut]) if question else None
    others = [TextHolder(text[:cut]) for text in other_sources if text]
    checked_text = answer[: limits.max_answer_chars]
    sentences = cited_sentences(checked_text)
    unchecked = max(0, len(sentences) - limits.max_sentences)
    if len(answer) > limits.max_answer_chars:
        unchecked += 1  # the rest of the answer, at least one sentence
        sentences = sentences[:-1]  # and the one the limit cut
    kept = [
        _sentence_support(text, cited, holders, asked, others, limits)
        for text, cited in sentences[: limits.max_sentences]
    ]
    return GroundingReport(
        status=_status(kept, unchecked, bool(holders)),
        sentences=kept,
        unchecked_sentences=unchecked,
    )


def attribute_by_specifics(
    answer: str,
    evidence: EvidenceBlock,
    question: str = "",
    limits: GroundingLimits | None = None,
    others: Sequence[str] = (),
) -> str:
    """Add ``[n]`` (or ``[n, m]``) to each sentence whose specifics the passages it cites
    do not hold, citing the evidence items that hold them.

    A small model often states what passages say without citing them, in words of its own
    (so :func:`~ragloom.qa.citations.attribute_uncited`'s word overlap misses it), or cites
    one passage for a fact another holds ("defines America as 'Possibilities' [2]", the
    word in [5]). Of a sentence's specifics (numbers, versions, identifiers, quoted
    phrases) that neither the question nor ``others`` (:attr:`GroundingCheck.own_words`)
    holds and its cited items do not, it cites, one by
    one, the item holding most of those not yet held (of several, the one sharing most of
    its words), at most :data:`MAX_ATTRIBUTED_PASSAGES`, until every one is held or no
    item holds another. The check that follows judges it as if the model had cited those
    items too: a specific no item shown to the model holds is still unsupported, and the
    answer can no longer pass, nor be declined, for citing nothing.
    """
    limits = limits or GroundingLimits()
    if not evidence.items or len(answer) > limits.max_answer_chars:
        return answer
    cut = limits.max_passage_chars
    holders = [TextHolder(item.chunk.text[:cut]) for item in evidence.items]
    given = [TextHolder(text[:cut]) for text in (question, *others)]
    pieces: list[str] = []
    item_words: dict[int, set[str]] = {}

    def words_of(n: int) -> set[str]:
        if n not in item_words:
            item_words[n] = content_words(evidence.items[n].chunk.text[:cut])
        return item_words[n]

    for sentence in split_sentences(answer):
        cited = {n - 1 for n in cited_numbers(sentence) if 0 < n <= len(holders)}
        claims = claims_of(strip_citations(sentence), limits.max_specifics)[0]
        left = [
            c
            for c in claims
            if not any(
                any(h.holds(k) for h in given) or any(holders[n].holds(k) for n in cited)
                for k in c.keys
            )
        ]
        words = content_words(sentence)
        chosen: list[int] = []
        while left and len(chosen) < MAX_ATTRIBUTED_PASSAGES:
            held = [[c for c in left if any(holder.holds(k) for k in c.keys)] for holder in holders]
            best = max(
                (n for n in range(len(holders)) if n not in chosen and n not in cited),
                key=lambda n: (len(held[n]), len(words & words_of(n)), -n),
                default=None,
            )
            if best is None or not held[best]:
                break
            chosen.append(best)
            left = [c for c in left if c not in held[best]]
        if not chosen:
            pieces.append(sentence)
            continue
        marks = ", ".join(str(n + 1) for n in sorted(chosen))
        body = sentence.rstrip()
        stripped = body.rstrip(".!?。！？")
        pieces.append(f"{stripped} [{marks}]{body[len(stripped) :]}{sentence[len(body) :]}")
    return "".join(pieces)


def should_decline(report: GroundingReport) -> bool:
    """Whether an answer so checked becomes a decline: none of its claims is found, or it
    cites nothing and claims a specific the question does not name."""
    if report.status == "unsupported":
        return True
    return report.status == "no_citations" and any(s.unsupported for s in report.sentences)


def _heading(citation: Citation) -> str:
    page = f", page {citation.page}" if citation.page else ""
    return f"[{citation.number}] {citation.source}{page}"


def decline_for(
    report: GroundingReport, citations: Sequence[Citation], evidence: EvidenceBlock
) -> tuple[str, list[Citation]]:
    """The decline that replaces an unsupported answer, and the passages it shows: the
    ones the answer cited, else the first :data:`DECLINE_PASSAGES` of the evidence."""
    if citations:
        reason = "the numbers and names it would give are not in the passages it cited"
        shown = list(citations)
    else:
        reason = "it cited none of them, and what it would say is not in the question"
        numbered = " ".join(f"[{n}]" for n in range(1, DECLINE_PASSAGES + 1))
        shown = [replace(c, highlight=None) for c in citations_for(numbered, evidence)]
    text = UNSUPPORTED_ANSWER.format(reason=reason)
    if shown:
        text += f" The closest passages: {'; '.join(_heading(c) for c in shown)}."
    return text, shown


def ground_answer(
    answer: str,
    citations: list[Citation],
    evidence: EvidenceBlock,
    check: GroundingCheck,
) -> Generator[Event, None, list[Citation]]:
    """Check ``answer`` against its ``citations`` and apply the policy; return the
    citations to show.

    Yields :class:`~ragloom.events.GroundingChecked` with the report, after an
    :class:`~ragloom.events.AnswerRevised` decline when :func:`should_decline`. A
    partly supported answer stays as written: the report marks its unsupported
    sentences, which the UI and the CLI show, since a mark keeps a true sentence the
    check cannot confirm (a number written in words, a unit converted) readable.
    """
    passages = {c.number: c.text for c in citations}
    report = check_grounding(answer, passages, check.question, check.other_sources, check.limits)
    if should_decline(report):
        text, citations = decline_for(report, citations, evidence)
        yield AnswerRevised(text)
        report = replace(report, declined=True)
    yield GroundingChecked(report)
    return citations
