"""Citing, on a small model's behalf, the passage that holds a sentence's specifics when
the sentence cites none, or cites one that does not hold them."""

from __future__ import annotations

from ragloom.events import AnswerCollector
from ragloom.qa import CitedAnswerer
from ragloom.qa.citations import EvidenceBlock
from ragloom.qa.grounding import attribute_by_specifics, check_grounding
from ragloom.schema import Chunk, RetrievedChunk
from tests.helpers.scripted_llm import ScriptedLLM

PASSAGES = [
    "The canteen opens at eight and serves soup on Fridays.",
    "The Zorblax reactor runs at 451 kelvin and was commissioned in 1962.",
    "Reactor 2 runs at 451 kelvin as well; it has 4 coolant pumps.",
]


def _evidence() -> EvidenceBlock:
    items = [
        RetrievedChunk(Chunk(f"c{n}", text, "s", f"doc{n}.md"), 1.0 - n / 10)
        for n, text in enumerate(PASSAGES)
    ]
    return EvidenceBlock(text="", items=items)


def test_an_uncited_sentence_gets_the_passage_holding_its_specifics() -> None:
    answer = "It was first switched on in 1962. It is hot."
    assert (
        attribute_by_specifics(answer, _evidence())
        == "It was first switched on in 1962 [2]. It is hot."
    )


def test_of_several_passages_holding_them_the_one_sharing_most_words_is_cited() -> None:
    answer = "The Zorblax reactor was commissioned at 451 kelvin."
    assert attribute_by_specifics(answer, _evidence()).endswith("kelvin [2].")
    answer = "Reactor 2 has coolant pumps and runs at 451 kelvin."
    assert attribute_by_specifics(answer, _evidence()).endswith("kelvin [3].")


def test_a_sentence_drawing_on_two_passages_cites_both() -> None:
    answer = "It was commissioned in 1962 and has 4 coolant pumps."
    assert attribute_by_specifics(answer, _evidence()) == (
        "It was commissioned in 1962 and has 4 coolant pumps [2, 3]."
    )


def test_a_specific_no_passage_holds_stays_unsupported_after_citing() -> None:
    answer = "It runs at 451 kelvin with 9 pumps."  # 9 is in no passage
    cited = attribute_by_specifics(answer, _evidence())
    assert cited == "It runs at 451 kelvin with 9 pumps [3]."  # [3] also says "pumps"
    report = check_grounding(cited, {n + 1: text for n, text in enumerate(PASSAGES)})
    assert report.sentences[0].unsupported == ["9"] and not report.supported


def test_a_sentence_is_left_alone_when_no_passage_holds_any_specific() -> None:
    answer = "It runs at 900 kelvin."
    assert attribute_by_specifics(answer, _evidence()) == answer


def test_specifics_the_question_names_do_not_earn_a_citation() -> None:
    answer = "Yes, it runs at 451 kelvin."
    assert attribute_by_specifics(answer, _evidence(), "Does it run at 451 kelvin?") == answer


def test_a_cited_sentence_keeps_its_own_citation() -> None:
    answer = "It runs at 451 kelvin [3]."
    assert attribute_by_specifics(answer, _evidence()) == answer


def test_a_sentence_citing_the_wrong_passage_also_cites_the_one_holding_its_specifics() -> None:
    # The model read the year in [2] but cited the canteen: [2] is added, [1] stays.
    answer = "It was commissioned in 1962 [1]."
    cited = attribute_by_specifics(answer, _evidence())
    assert cited == "It was commissioned in 1962 [1] [2]."
    report = check_grounding(cited, {n + 1: text for n, text in enumerate(PASSAGES)})
    assert report.supported and report.sentences[0].supported_by == [2]
    # Only what the cited passage lacks is looked for: 451 is in [3], 4 pumps too.
    answer = "Reactor 2 runs at 451 kelvin with 4 coolant pumps [3]."
    assert attribute_by_specifics(answer, _evidence()) == answer


def test_a_specific_no_passage_holds_earns_no_citation_and_stays_unsupported() -> None:
    answer = "It was commissioned in 1971 [2]."
    assert attribute_by_specifics(answer, _evidence()) == answer
    report = check_grounding(answer, {n + 1: text for n, text in enumerate(PASSAGES)})
    assert report.sentences[0].unsupported == ["1971"]


def test_a_citation_of_a_number_past_any_source_is_no_citation() -> None:
    # int() refuses 4,300 digits and more: such "citations" must not raise.
    answer = f"It runs at 451 kelvin [{'9' * 5000}]."
    assert attribute_by_specifics(answer, _evidence()).endswith("] [2].")


def test_an_answer_citing_nothing_passes_when_its_specifics_are_in_a_passage() -> None:
    hits = _evidence().items
    llm = ScriptedLLM(replies=["It was commissioned in 1962."])
    answerer = CitedAnswerer(llm=llm, check_grounding=True)
    record = AnswerCollector("fullqa").extend(answerer.stream("When was it built?", hits)).record(0)
    assert record.answer == "It was commissioned in 1962 [2]."
    assert record.grounding is not None and record.grounding.supported
    assert [c.source for c in record.citations] == ["doc1.md"]
    # An invented year still cites nothing and is still declined.
    llm = ScriptedLLM(replies=["It was commissioned in 1971."])
    answerer = CitedAnswerer(llm=llm, check_grounding=True)
    record = AnswerCollector("fullqa").extend(answerer.stream("When was it built?", hits)).record(0)
    assert record.grounding is not None and record.grounding.declined


def test_specifics_of_ragloom_s_own_words_or_a_tool_are_not_attributed() -> None:
    # ReAct's preface is Ragloom's ("... within 5 steps"), not a claim of the documents,
    # though a passage holds a 5 too; a calculator's 28 is the calculator's.
    evidence = EvidenceBlock(
        text="", items=[RetrievedChunk(Chunk("c5", "It has 5 floors.", "s", "b.md"), 1.0)]
    )
    preface = "I could not finish within 5 steps."
    assert attribute_by_specifics(preface, evidence) == "I could not finish within 5 steps [1]."
    assert attribute_by_specifics(preface, evidence, others=(preface,)) == preface
