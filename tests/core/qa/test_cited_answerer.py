"""CitedAnswerer: prompt layout, streaming and citations, with a scripted LLM."""

from dataclasses import replace

import pytest

from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.events import AnswerCollector, AnswerDelta, CitationsFound, LLMCallFinished
from ragloom.llms.base import LLMError
from ragloom.qa import CitedAnswerer
from ragloom.qa.answer import NO_EVIDENCE_ANSWER, bare_answer_notice
from ragloom.retrieval import SentenceFocus
from ragloom.schema import Chunk, RetrievedChunk
from tests.helpers.scripted_llm import ScriptedLLM


def _hits() -> list[RetrievedChunk]:
    return [
        RetrievedChunk(Chunk("c1", "The reactor runs at 451 kelvin.", "s", "reactor.md"), 0.9),
        RetrievedChunk(Chunk("c2", "It was built in 1999.", "s", "reactor.md"), 0.5),
    ]


def test_streams_answer_then_citations_and_usage() -> None:
    llm = ScriptedLLM(replies=["It runs at 451 kelvin [1]."])
    events = list(CitedAnswerer(llm=llm).stream("How hot is the reactor?", _hits()))
    text = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert text == "It runs at 451 kelvin [1]."
    (found,) = [e for e in events if isinstance(e, CitationsFound)]
    assert [(c.number, c.chunk_id) for c in found.citations] == [(1, "c1")]
    assert any(isinstance(e, LLMCallFinished) for e in events)


def test_prompt_is_system_then_evidence_then_question() -> None:
    llm = ScriptedLLM(replies=["ok"])
    list(CitedAnswerer(llm=llm).stream("How hot?", _hits()))
    system, user = llm.prompts[0]
    assert system.role == "system" and "square brackets" in system.content
    assert user.content.index("451 kelvin") < user.content.index("Question: How hot?")
    assert user.content.endswith("Question: How hot?\nAnswer:")


def test_no_evidence_says_so_without_calling_the_llm() -> None:
    llm = ScriptedLLM(replies=[])
    record = AnswerCollector("fullqa").extend(CitedAnswerer(llm=llm).stream("Q?", []))
    assert record.answer == NO_EVIDENCE_ANSWER
    assert record.citations == [] and llm.prompts == []


def test_evidence_is_trimmed_to_the_context_window() -> None:
    big = [
        RetrievedChunk(Chunk(f"c{i}", "word " * 300, "s", "big.md"), 1.0 - i / 100)
        for i in range(20)
    ]
    llm = ScriptedLLM(replies=["fine"], window=2048)
    answerer = CitedAnswerer(llm=llm, max_answer_tokens=256)
    list(answerer.stream("Q?", big))
    prompt_tokens = sum(llm.count_tokens(m.content) for m in llm.prompts[0])
    assert prompt_tokens + 256 <= 2048


def test_a_sentence_focus_shows_only_the_sentences_nearest_the_question() -> None:
    hits = [
        RetrievedChunk(
            Chunk(
                "c1",
                "The canteen serves soup. The reactor runs at 451 kelvin. Visitors wear "
                "badges. The car park has 40 spaces. Tours start at noon.",
                "s",
                "reactor.md",
            ),
            0.9,
        ),
        RetrievedChunk(Chunk("c2", "Roses grow in the garden.", "s", "garden.md"), 0.5),
    ]
    focus = SentenceFocus(embeddings=SentenceTransformerEmbeddings(), sentences=1, neighbours=1)
    llm = ScriptedLLM(replies=["It runs at 451 kelvin."])
    events = list(CitedAnswerer(llm=llm, focus=focus).stream("How hot is the reactor?", hits))
    user = llm.prompts[0][1].content
    assert (
        "[1] (reactor.md) The canteen serves soup. The reactor runs at 451 kelvin. "
        "Visitors wear badges. …\n" in user
    )
    assert "car park" not in user and "garden" not in user
    (found,) = [e for e in events if isinstance(e, CitationsFound)]
    # The uncited sentence is attributed to the whole chunk, which the citation carries.
    assert [(c.number, c.chunk_id) for c in found.citations] == [(1, "c1")]
    assert "car park" in found.citations[0].text


def test_an_answer_of_bare_source_numbers_is_replaced_by_a_notice_keeping_the_sources() -> None:
    llm = ScriptedLLM(replies=["[1]. [2]."])
    record = AnswerCollector("fullqa").extend(CitedAnswerer(llm=llm).stream("How hot?", _hits()))
    assert record.answer == bare_answer_notice("[1]. [2].")
    assert record.answer.startswith("The model answered with source numbers only")
    assert [c.chunk_id for c in record.citations] == ["c1", "c2"]


def test_an_empty_answer_says_so() -> None:
    llm = ScriptedLLM(replies=["  \n"])
    record = AnswerCollector("fullqa").extend(CitedAnswerer(llm=llm).stream("How hot?", _hits()))
    assert record.answer.startswith("The model returned no answer text.")
    assert record.citations == []
    assert bare_answer_notice(" . ").startswith("The model returned no answer text.")
    assert bare_answer_notice("No [1].") is None  # a short answer with a word is an answer


def test_earlier_answers_reach_the_prompt_without_their_citation_marks() -> None:
    from ragloom.llms.base import ChatMessage

    history = [
        ChatMessage("user", "What does argv[1] hold?"),
        ChatMessage("assistant", "The file name [2]; run .recover [1, 3] on it [4]."),
    ]
    llm = ScriptedLLM(replies=["It runs at 451 kelvin [1]."])
    list(CitedAnswerer(llm=llm, history=history).stream("How hot?", _hits()))
    prompt = llm.prompts[0][-1].content
    # The marks numbered the earlier answer's sources: here [2] would cite "built in 1999".
    assert "Assistant: The file name; run .recover on it.\n" in prompt
    assert "User: What does argv[1] hold?\n" in prompt  # a question's brackets are its own


class _StoppedAtLength(ScriptedLLM):
    """A model stopped at its token limit mid-answer (finish reason ``length``)."""

    def stream(self, messages, options=None):  # type: ignore[no-untyped-def]
        for item in super().stream(messages, options):
            if item.result is not None:
                item = replace(item, result=replace(item.result, finish_reason="length"))
            yield item


def test_an_answer_the_model_was_stopped_in_says_it_was_cut_short() -> None:
    llm = _StoppedAtLength(replies=["It runs at 451 kelvin [1] and was"])
    answerer = CitedAnswerer(llm=llm, max_answer_tokens=9)
    record = AnswerCollector("fullqa").extend(answerer.stream("How hot is it?", _hits()))
    assert record.answer.startswith("It runs at 451 kelvin [1] and was")
    assert record.answer.endswith("\n\n(Cut short: the model stopped at its length limit.)")
    # An answer that ended on its own says nothing of the kind.
    whole = CitedAnswerer(llm=ScriptedLLM(replies=["It runs at 451 kelvin [1]."]))
    assert "Cut short" not in AnswerCollector("fullqa").extend(whole.stream("Q?", _hits())).answer


def test_a_call_that_breaks_off_still_counts_in_the_usage() -> None:
    """The endpoint failed after three words: the tokens it took are not lost from the
    answer's usage (nor from Auto's budget), and the failure goes on to the mode."""
    from tests.helpers.misbehaving_llms import FailingLLM

    llm = FailingLLM(replies=["It runs at 451 kelvin [1]."], words_first=3)
    collector = AnswerCollector("fullqa")
    with pytest.raises(LLMError, match="refused"):
        for event in CitedAnswerer(llm=llm).stream("How hot is it?", _hits()):
            collector.add(event)
    (usage,) = collector.llm_usages
    assert usage.completion_tokens == 3 and usage.prompt_tokens > 0
