"""The grounding check on crafted answers: specifics found, missing, written differently."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.qa.claims import TextHolder, claims_of
from ragloom.qa.grounding import (
    GroundingLimits,
    check_grounding,
    should_decline,
)

LIMITS = """SQLite does not support joins containing more than 64 tables.
The maximum length of a string or BLOB is 1000000000 bytes (SQLITE_MAX_LENGTH)."""
WAL = "The default checkpoint threshold is 1000 pages. Introduced in version 3.7.0."
CARRAY = "The carray() function's default datatype is 'int32'. Use PRAGMA journal_mode=WAL."


def _specifics(sentence: str) -> list[tuple[str, str]]:
    claims, _ = claims_of(sentence, 30)
    return [(c.specific.text, c.specific.kind) for c in claims]


def test_a_sentence_whose_specifics_are_in_its_passage_is_supported() -> None:
    report = check_grounding("SQLite allows at most 64 tables in a join [1].", {1: LIMITS})
    assert report.status == "supported"
    (sentence,) = report.sentences
    assert sentence.supported and sentence.unsupported == []
    assert sentence.cited == [1] and sentence.supported_by == [1]
    assert [s.text for s in sentence.specifics] == ["SQLite", "64"]


def test_one_supported_and_one_unsupported_sentence_is_partly_supported() -> None:
    answer = "A join may hold 64 tables [1]. The checkpoint threshold is 2000 pages [2]."
    report = check_grounding(answer, {1: LIMITS, 2: WAL})
    assert report.status == "partly"
    first, second = report.sentences
    assert first.supported and not second.supported
    assert second.unsupported == ["2000"] and second.supported_by == []
    assert report.unsupported_specifics() == ["2000"]
    assert not should_decline(report)


def test_an_answer_none_of_whose_claims_is_found_is_unsupported_and_declined() -> None:
    answer = "A join may hold 128 tables [1]. This is set by SQLITE_MAX_JOIN [1]."
    report = check_grounding(answer, {1: LIMITS})
    assert report.status == "unsupported"
    assert report.unsupported_specifics() == ["128", "SQLITE_MAX_JOIN"]
    assert should_decline(report)


def test_a_specific_must_be_in_the_passage_the_sentence_cites() -> None:
    # 1000 is in [2], not in the [1] the sentence cites.
    report = check_grounding("The threshold is 1000 pages [1].", {1: LIMITS, 2: WAL})
    assert report.sentences[0].unsupported == ["1000"]


def test_a_sentence_without_citations_is_checked_against_the_answers_citations() -> None:
    answer = "The threshold is 1000 pages. It came in version 3.7.0 [2]."
    report = check_grounding(answer, {1: LIMITS, 2: WAL})
    first, second = report.sentences
    assert first.cited == [] and first.supported and first.supported_by == [2]
    assert second.supported


def test_an_answer_that_cites_nothing_never_passes_as_supported() -> None:
    report = check_grounding("SQLite allows 64 tables in a join.", {})
    assert report.status == "no_citations"
    assert not report.supported and not report.sentences[0].supported
    assert should_decline(report)  # it claims a number the question does not name


def test_an_uncited_answer_without_invented_specifics_is_not_declined() -> None:
    question = "What does frobnicate() return?"
    report = check_grounding("The documents do not mention frobnicate().", {}, question)
    assert report.status == "no_citations"
    assert report.sentences[0].unsupported == []
    assert not should_decline(report)


def test_specifics_of_the_question_count_as_found() -> None:
    question = "What does PRAGMA cache_size set, in SQLite 3.40.0?"
    answer = "PRAGMA cache_size in 3.40.0 sets the number of pages [1]."
    report = check_grounding(answer, {1: "It sets the suggested number of pages."}, question)
    assert report.status == "supported"


REACTOR = "The Zorblax reactor runs at 451 kelvin. It was commissioned in 1962."


def test_a_leading_questions_number_repeated_over_a_passage_that_says_otherwise_is_declined() -> (
    None
):
    question = "Is the Zorblax reactor's limit 900 kelvin?"
    report = check_grounding("Yes, the reactor runs at 900 kelvin [1].", {1: REACTOR}, question)
    assert report.status == "unsupported" and report.sentences[0].unsupported == ["900"]
    assert should_decline(report)


def test_a_leading_questions_number_is_declined_though_the_sentence_repeats_its_names() -> None:
    """The names the question and the passage share state nothing new."""
    question = "Is the limit of the Zorblax reactor commissioned in 1962 900 kelvin?"
    answer = "Yes, the Zorblax reactor of 1962 runs at 900 kelvin [1]."
    report = check_grounding(answer, {1: REACTOR}, question)
    assert report.status == "unsupported" and report.sentences[0].unsupported == ["900"]


def test_a_questions_number_counts_in_a_sentence_that_states_what_its_passage_holds() -> None:
    question = "Is the Zorblax reactor's limit 900 kelvin?"
    answer = "No: it runs at 451 kelvin, not 900 [1]. Yes, 900 kelvin is its limit [1]."
    report = check_grounding(answer, {1: REACTOR}, question)
    corrected, repeated = report.sentences
    assert corrected.supported and corrected.supported_by == [1]
    assert repeated.unsupported == ["900"]
    assert report.status == "partly" and not should_decline(report)


def test_a_questions_number_counts_in_an_answer_that_cites_nothing() -> None:
    """Nothing is claimed from a source: "the documents do not say" is not declined."""
    question = "Is the Zorblax reactor's limit 900 kelvin?"
    report = check_grounding("The documents do not say whether it is 900 kelvin.", {}, question)
    assert report.sentences[0].unsupported == [] and not should_decline(report)


def test_a_tools_result_counts_as_found() -> None:
    answer = "The WAL file is 4120032 bytes long [1]."
    passages = {1: "The WAL header is 32 bytes in size."}
    assert check_grounding(answer, passages).status == "unsupported"
    calculated = check_grounding(answer, passages, other_sources=["#E3 = 4120032"])
    assert calculated.status == "supported"


@pytest.mark.parametrize(
    ("written", "passage"),
    [
        ("5.0", "a value of 5"),
        ("5", "a value of 5.0"),
        ("1,000,000", "at most 1000000 rows"),
        ("10**6", "at most 1,000,000 rows"),
        ("10^6", "at most 1000000 rows"),
        ("1e6", "at most 1,000,000 rows"),
        ("1 million", "at most 1000000 rows"),
        ("64", "no more than sixty-four tables"),
        ("2000", "two thousand levels"),
        ("3rd", "the third argument"),
        ("66%", "66 percent larger"),
        ("50%", "a ratio of 0.5"),
        ("0x7FFFFFFF", "the value 2147483647"),
        ("-1", "returns -1 on error"),
        # As typeset: a minus sign, digits grouped by no-break, narrow or thin spaces.
        ("\u22125", "returns -5 on error"),
        ("-5", "returns \u22125 on error"),
        ("12,345", "holds 12\u00a0345 rows"),
        ("12345", "holds 12\u202f345 rows"),
        ("1\u2009234\u2009567", "holds 1,234,567 rows"),
        ("12 345", "holds 12,345 rows"),
        ("12 345", "holds 12 345 rows"),
        ("\u22121\u00a0234.5", "a balance of -1234.5"),
    ],
)
def test_numbers_written_differently_are_the_same_number(written: str, passage: str) -> None:
    report = check_grounding(f"It is {written} [1].", {1: passage})
    assert report.status == "supported", report.sentences


@pytest.mark.parametrize(
    ("written", "passage"),
    [("64", "more than 640 tables"), ("1.2", "constant 12"), ("5", "values 15 and 50")],
)
def test_a_number_inside_another_is_not_found(written: str, passage: str) -> None:
    assert check_grounding(f"It is {written} [1].", {1: passage}).status == "unsupported"


def test_versions_match_with_a_trailing_zero_optional() -> None:
    passage = "Generated columns were added in version 3.31.0 and fixed in 3.31.1."
    assert check_grounding("Added in 3.31.0 [1].", {1: passage}).status == "supported"
    assert check_grounding("Added in 3.31 [1].", {1: passage}).status == "supported"
    assert check_grounding("Added in 3.31.2 [1].", {1: passage}).status == "unsupported"
    # A passage's patch release holds its series, not another release of it.
    assert check_grounding("Added in 3.35.0 [1].", {1: "in 3.35.5"}).status == "unsupported"
    assert check_grounding("Added in 3.35 [1].", {1: "in 3.35.5"}).status == "supported"


def test_identifiers_are_extracted_by_shape() -> None:
    sentence = (
        "Call sqlite3_open_v2() or carray(), read xRandomness, os.path.join and "
        "SQLITE_MAX_LENGTH, the .recover command, int32 and NUMERIC."
    )
    assert _specifics(sentence) == [
        ("sqlite3_open_v2()", "identifier"),
        ("carray()", "identifier"),
        ("xRandomness", "identifier"),
        ("os.path.join", "identifier"),
        ("SQLITE_MAX_LENGTH", "identifier"),
        (".recover", "identifier"),
        ("int32", "identifier"),
        ("NUMERIC", "identifier"),
    ]


def test_options_and_quotes_are_extracted() -> None:
    sentence = 'Run it with --safe or -x and PRAGMA journal_mode, then "lost_and_found".'
    assert _specifics(sentence) == [
        ("--safe", "option"),
        ("-x", "option"),
        ("PRAGMA journal_mode", "option"),
        ("lost_and_found", "identifier"),
    ]
    assert _specifics("It's the 'users' table, not “a made up phrase”.") == [
        ("users", "identifier"),
        ("a made up phrase", "quote"),
    ]


def test_plain_prose_has_no_specifics() -> None:
    assert _specifics("The table is created when the database is opened, e.g. at start.") == []


def test_identifiers_are_found_as_whole_names_case_insensitively() -> None:
    assert check_grounding("The default is 'INT32' [1].", {1: CARRAY}).status == "supported"
    assert check_grounding("Call carray() [1].", {1: CARRAY}).status == "supported"
    assert check_grounding("Set PRAGMA journal_mode [1].", {1: CARRAY}).status == "supported"
    # sqlite3_open is another function than sqlite3_open_v2.
    passage = {1: "Use sqlite3_open_v2() to open it."}
    assert check_grounding("Use sqlite3_open() [1].", passage).status == "unsupported"
    assert check_grounding("Use SQLITE3_OPEN_V2 [1].", passage).status == "supported"


def test_quoted_phrases_must_occur_word_for_word() -> None:
    passage = {1: 'It reports "database disk image is malformed" and stops.'}
    found = check_grounding('It says "database disk image is malformed" [1].', passage)
    assert found.status == "supported"
    invented = check_grounding('It says "database file is corrupt" [1].', passage)
    assert invented.sentences[0].unsupported == ["database file is corrupt"]


def test_quotes_in_other_scripts_are_found_as_search_finds_them() -> None:
    # Arabic with vowel marks its passage leaves out, and the other way round.
    passage = {1: "كتب الطالب الدرس في المدرسة"}
    assert check_grounding('It says "كَتَبَ الطَّالِبُ" [1].', passage).status == "supported"
    assert check_grounding('The verb is "كتب" [1].', {1: "كَتَبَ الطالبُ"}).supported
    # Hindi: "address" is not in a passage naming "husband" (the same letters, another
    # vowel sign, which grounding once dropped).
    passage = {1: "नदी के पास पति का घर है"}
    assert check_grounding('It names "पति" [1].', passage).status == "supported"
    assert check_grounding('It names "पता" [1].', passage).sentences[0].unsupported == ["पता"]
    # A word inside a run without spaces: Thai, Chinese.
    thai = check_grounding('It says "ภาษาไทย" [1].', {1: "ภาษาไทยเป็นภาษาราชการ"})
    assert thai.status == "supported"
    assert check_grounding('It says "天气" [1].', {1: "今天的天气很好。"}).status == "supported"
    assert check_grounding('It says "天空" [1].', {1: "今天的天气很好。"}).status == "unsupported"


def test_options_are_exact() -> None:
    passage = {1: "Start the shell with -bail or --safe."}
    assert check_grounding("Use -bail [1].", passage).status == "supported"
    assert check_grounding("Use --unsafe [1].", passage).status == "unsupported"
    assert check_grounding("Use -Bail [1].", passage).status == "unsupported"


def test_a_citation_standing_alone_belongs_to_the_sentence_before() -> None:
    report = check_grounding("A join holds 64 tables. [1] It is a limit.", {1: LIMITS})
    first, second = report.sentences
    assert first.cited == [1] and first.supported_by == [1]
    assert second.cited == []


def test_too_many_sentences_leave_the_answer_partly_supported_at_best() -> None:
    answer = "A join holds 64 tables [1]. " * 5
    report = check_grounding(answer, {1: LIMITS}, limits=GroundingLimits(max_sentences=3))
    assert len(report.sentences) == 3 and report.unchecked_sentences == 2
    assert report.status == "partly"


def test_too_many_specifics_leave_the_sentence_unsupported() -> None:
    answer = "It holds 64 tables, SQLite and 1000000000 bytes [1]."
    report = check_grounding(answer, {1: LIMITS}, limits=GroundingLimits(max_specifics=2))
    (sentence,) = report.sentences
    assert len(sentence.specifics) == 2 and sentence.unchecked == 1
    assert not sentence.supported and report.status != "supported"


def test_text_past_the_answer_limit_is_not_checked() -> None:
    answer = "A join holds 64 tables [1]. " + "It is fast. " * 50
    report = check_grounding(answer, {1: LIMITS}, limits=GroundingLimits(max_answer_chars=60))
    assert report.unchecked_sentences >= 1 and report.status == "partly"


def test_a_specific_only_past_the_passage_limit_is_not_found() -> None:
    passage = {1: "x " * 100 + "64 tables"}
    limits = GroundingLimits(max_passage_chars=50)
    assert check_grounding("64 tables [1].", passage, limits=limits).status == "unsupported"


def test_the_report_is_json() -> None:
    report = check_grounding("A join holds 128 tables [1].", {1: LIMITS})
    data = report.to_dict()
    assert data["status"] == "unsupported" and data["declined"] is False
    (sentence,) = data["sentences"]
    assert sentence["unsupported"] == ["128"] and sentence["supported_by"] == []
    assert {"text": "128", "kind": "number"} in sentence["specifics"]


# Pieces that make specifics, and break them: digits, separators, quotes, citations.
_PIECES = [*"ab_. -,'\"`()[]%*^eE0123456789xXvV\n", "PRAGMA ", "--", "[1]", "million"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=200).map("".join)


@settings(max_examples=300, deadline=2000)
@given(answer=_TEXT, passage=_TEXT, question=_TEXT)
def test_any_text_is_checked_without_raising(answer: str, passage: str, question: str) -> None:
    report = check_grounding(answer, {1: passage}, question)
    assert report.status in ("supported", "partly", "unsupported", "no_citations")
    for sentence in report.sentences:
        assert len(sentence.specifics) <= GroundingLimits().max_specifics
        assert sentence.text in answer
    report.to_dict()


@settings(max_examples=100, deadline=2000)
@given(text=st.text(max_size=2000))
def test_any_unicode_text_can_be_held_and_claimed(text: str) -> None:
    holder = TextHolder(text)
    for claim in claims_of(text, 30)[0]:
        assert any(holder.holds(key) for key in claim.keys), claim


def test_digits_parted_by_a_plain_space_may_be_separate_numbers() -> None:
    passage = "In 2019, 100 people came; the scores were 95 and 100."
    # Each group is in the passage: read as separate numbers, the sentence is supported.
    assert check_grounding("In 2019 100 people came [1].", {1: passage}).supported
    assert check_grounding("Scores of 95 100 [1].", {1: passage}).supported
    # Neither the one number nor every group is: 95 100 is not 95 with some other number.
    assert check_grounding("Scores of 95 101 [1].", {1: passage}).status == "unsupported"
    # A no-break space only ever joins: 95 100 is then the one number 95100.
    assert check_grounding("Scores of 95\u00a0100 [1].", {1: passage}).status == "unsupported"
    # A passage's spaced groups hold each group alone too.
    assert check_grounding("It has 345 rows [1].", {1: "holds 12 345 rows"}).supported
