"""The check before answering on crafted questions, with a lookup of known terms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ragloom.events import AnswerCollector, AnswerDelta, CitationsFound, QuestionCheck
from ragloom.qa.precheck import (
    MAX_SHOWN_TERM_CHARS,
    PRECHECK_STEP,
    check_question,
    decline_text,
    merge_lookups,
    stream_decline,
    stream_precheck,
)
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.stores import BM25Store
from ragloom.stores.bm25.tokenizer import tokenize

DOCUMENTS = "The date() and strftime() functions. PRAGMA journal_mode=WAL. Version 3.40.0. Blob."


class Lookup:
    """Answers from the words of DOCUMENTS (phrases: every word), recording each call."""

    def __init__(self, text: str = DOCUMENTS, unknown: bool = False) -> None:
        self.words = set(tokenize(text))
        self.unknown = unknown
        self.calls: list[list[str]] = []

    def __call__(self, terms: Sequence[str]) -> Mapping[str, bool | None]:
        self.calls.append(list(terms))
        if self.unknown:
            return dict.fromkeys(terms, None)
        return {t: all(w in self.words for w in tokenize(t)) for t in terms}


def _hit(chunk_id: str, text: str) -> RetrievedChunk:
    chunk = Chunk(id=chunk_id, text=text, source_id="s", source_name="lang_datefunc.html")
    return RetrievedChunk(chunk=chunk, score=1.0)


PASSAGES = [_hit("p1", "The date() function returns the date."), _hit("p2", "strftime() formats.")]


def test_an_absent_identifier_declines_naming_it() -> None:
    check = check_question("What does timediff() return?", PASSAGES, Lookup())
    assert check == QuestionCheck(["timediff()"], ["timediff()"], [], True)
    assert decline_text(check, 2).startswith("The documents do not mention `timediff()`.")


def test_an_absent_option_declines() -> None:
    check = check_question("Which PRAGMA journal_mode value enables wal2?", PASSAGES, Lookup())
    assert check.declined and check.missing == ["wal2"]
    check = check_question("What does PRAGMA cache_spill do?", PASSAGES, Lookup())
    assert check.missing == ["PRAGMA cache_spill"]


def test_present_specifics_pass() -> None:
    lookup = Lookup()
    check = check_question("What does strftime() return for PRAGMA journal_mode?", PASSAGES, lookup)
    assert not check.declined and check.missing == []
    assert check.terms == ["PRAGMA journal_mode", "strftime()"]
    assert lookup.calls == [["journal_mode", "strftime"]]


def test_a_mixed_question_names_only_what_is_missing() -> None:
    check = check_question("Is date() faster than timediff() in 3.41.0?", PASSAGES, Lookup())
    assert check.declined
    assert check.missing == ["timediff()", "3.41.0"]
    text = decline_text(check, 2)
    assert text == (
        "The documents do not mention `timediff()` or `3.41.0`. "
        "The closest passages found: [1], [2]."
    )


def test_common_words_and_numbers_never_decline() -> None:
    lookup = Lookup()
    check = check_question("How long does it take to cook rice for 12 people?", PASSAGES, lookup)
    assert check == QuestionCheck() and lookup.calls == []  # nothing specific: no lookup
    assert not check_question("Is the limit 65536 bytes?", PASSAGES, lookup).declined


def test_a_name_no_document_holds_declines_one_they_hold_passes() -> None:
    assert check_question("Can it export Parquet?", PASSAGES, Lookup()).missing == ["Parquet"]
    assert not check_question("Where is each Blob kept?", PASSAGES, Lookup()).declined
    # In lower case a rare word may be a typo or another form of a word: never declines.
    lookup = Lookup()
    assert check_question("Where is each towrads kept?", PASSAGES, lookup) == QuestionCheck()
    assert lookup.calls == []


def test_indices_that_cannot_tell_never_decline() -> None:
    assert not check_question(
        "What does timediff() return?", PASSAGES, Lookup(unknown=True)
    ).declined
    assert not check_question("What does timediff() return?", PASSAGES, None).declined


def test_passages_holding_none_of_the_strict_specifics_decline_only_when_asked() -> None:
    question = "What does PRAGMA journal_mode return?"
    assert not check_question(question, PASSAGES, Lookup()).declined
    check = check_question(question, PASSAGES, Lookup(), in_passages=True)
    assert check.declined and check.not_in_passages == ["PRAGMA journal_mode"]
    assert decline_text(check, 0) == "None of the passages found mentions `PRAGMA journal_mode`."
    held = check_question("What does date() return?", PASSAGES, Lookup(), in_passages=True)
    assert not held.declined


def test_a_quote_in_another_script_is_found_as_the_index_holds_it(tmp_path: Path) -> None:
    # Arabic quoted with vowel marks its documents leave out; Hindi, whose vowel signs the
    # tokenizer once dropped; Thai, a word inside a run without spaces.
    texts = {"ar": "كتب الطالب الدرس", "hi": "नदी का पानी ठंडा है", "th": "ภาษาไทยเป็นภาษาราชการ"}
    store = BM25Store(tmp_path / "bm25")
    store.add([_hit(key, text).chunk for key, text in texts.items()])
    passages = [_hit(key, text) for key, text in texts.items()]
    for question in ('What does "كَتَبَ الطالبُ" mean?', 'Why "पानी ठंडा"?', 'Is "ภาษาไทย" used?'):
        check = check_question(question, passages, store.find_terms, in_passages=True)
        assert check.terms and not check.declined, question
    # Another word of the same letters without their vowel signs is not there.
    check = check_question('What is "नानी"?', passages, store.find_terms, in_passages=True)
    assert check.missing == ["नानी"]


def test_a_term_is_shown_escaped_and_cut() -> None:
    long = "x" * 200
    check = QuestionCheck(["a`b"], ["a`b", "two\nlines", long], [], True)
    text = decline_text(check, 0)
    assert "`a'b`" in text and "`two lines`" in text
    assert f"`{'x' * (MAX_SHOWN_TERM_CHARS - 1)}…`" in text


def test_the_decline_cites_the_closest_passages_once_each() -> None:
    check = QuestionCheck(["timediff()"], ["timediff()"], [], True)
    events = list(stream_decline(check, [*PASSAGES, PASSAGES[0]]))
    assert isinstance(events[0], AnswerDelta) and isinstance(events[1], CitationsFound)
    assert [(c.number, c.chunk_id) for c in events[1].citations] == [(1, "p1"), (2, "p2")]
    assert events[0].text.endswith("[1], [2].")


def test_the_step_carries_the_typed_check_into_the_record_and_json() -> None:
    stream = stream_precheck("What does timediff() return?", PASSAGES, Lookup())
    events = []
    try:
        while True:
            events.append(next(stream))
    except StopIteration as stop:
        returned = stop.value
    collector = AnswerCollector("fullqa").extend([*events, *stream_decline(returned, PASSAGES)])
    record = collector.record(0.1)
    assert record.precheck == returned and record.precheck.declined
    data = record.to_dict()
    assert data["precheck"] == {
        "terms": ["timediff()"],
        "missing": ["timediff()"],
        "not_in_passages": [],
        "declined": True,
    }
    finished = [s for s in data["steps"] if s["step"] == PRECHECK_STEP and s["event"] == "finished"]
    assert finished[0]["output"] == data["precheck"]
    assert AnswerCollector("fullqa").record(0).to_dict()["precheck"] is None


def test_lookups_of_several_indices_merge() -> None:
    merged = merge_lookups(
        [{"a": True, "b": False, "c": False}, {"a": False, "b": None, "c": False}], ["a", "b", "c"]
    )
    assert merged == {"a": True, "b": None, "c": False}
    assert merge_lookups([], ["a"]) == {"a": None}
