"""Decomposition with a scripted LLM: split, answer each part from retrieval, combine."""

from __future__ import annotations

from pathlib import Path

from ragloom.agents.decompose import DecompositionAgent, parse_subquestions
from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.events import AnswerCollector, PlanCreated, PlanItem
from ragloom.retrieval import FullTextRetriever, SentenceFocus
from ragloom.schema import Chunk
from ragloom.stores import BM25Store
from tests.helpers.scripted_llm import ScriptedLLM


def test_sub_questions_are_read_from_numbered_or_bulleted_lines_once_each() -> None:
    text = "1. Who runs the reactor?\n2) How hot is it? Very.\n- how hot is it?\nnoise\n3: Where?"
    assert parse_subquestions(text, 5) == ["Who runs the reactor?", "How hot is it?", "Where?"]
    assert parse_subquestions(text, 2) == ["Who runs the reactor?", "How hot is it?"]
    assert parse_subquestions("no list here", 3) == []


def test_each_part_is_answered_from_its_own_search_and_the_answer_cites_them(
    tmp_path: Path,
) -> None:
    store = BM25Store(tmp_path / "bm25")
    store.add(
        [
            Chunk("a-0", "The Zorblax reactor runs at 451 kelvin.", "a", "reactor.md"),
            Chunk("b-0", "Dr. Imre Vass is the director of the plant.", "b", "staff.md"),
        ]
    )
    llm = ScriptedLLM(
        replies=[
            "1. Who is the director?\n2. How hot is the reactor in kelvin?\n",
            "Dr. Imre Vass [1].",
            "451 kelvin [2].",
            "Dr. Imre Vass is the director [1]. The reactor runs at 451 kelvin [2].",
        ],
        grammar=True,
    )
    agent = DecompositionAgent(llm=llm, retrievers=[FullTextRetriever(store=store)], top_k=1)
    events = agent.run("Who is the director and how hot is the reactor?")
    record = AnswerCollector("decompose").extend(events).to_dict(0.0)

    plan = next(e for e in events if isinstance(e, PlanCreated))
    assert [s.text for s in plan.steps] == [
        "Who is the director?",
        "How hot is the reactor in kelvin?",
    ]
    assert 'root ::= "1. " line ("2. " line ("3. " line)?)?' in llm.options_seen[0].grammar
    assert llm.options_seen[0].grammar.endswith('"?\\n"')
    assert [c["chunk_id"] for c in record["citations"]] == ["b-0", "a-0"]
    # Each sub-answer saw only its own passage, numbered request-wide.
    assert "[2] (reactor.md)" in llm.prompts[2][-1].content
    assert "staff.md" not in llm.prompts[2][-1].content
    final = llm.prompts[3][-1].content
    assert "- Who is the director? Dr. Imre Vass [1]." in final
    assert record["usage"]["llm_calls"] == 4


def test_a_question_the_model_does_not_split_is_asked_as_it_is(tmp_path: Path) -> None:
    store = BM25Store(tmp_path / "bm25")
    store.add([Chunk("a-0", "The reactor runs at 451 kelvin.", "a", "reactor.md")])
    llm = ScriptedLLM(replies=["I cannot split this", "451 kelvin [1].", "It runs at 451 K [1]."])
    agent = DecompositionAgent(llm=llm, retrievers=[FullTextRetriever(store=store)])
    events = agent.run("How hot is the reactor?")
    plan = next(e for e in events if isinstance(e, PlanCreated))
    assert plan.steps == [PlanItem("Q1", "How hot is the reactor?")]
    assert llm.options_seen[0].grammar is None


def test_with_a_sentence_focus_each_part_sees_the_sentences_nearest_it(tmp_path: Path) -> None:
    store = BM25Store(tmp_path / "bm25")
    text = (
        "The canteen serves soup on Fridays. The car park has forty spaces. Tours start at "
        "noon. The Zorblax reactor runs at 451 kelvin. Visitors must wear a badge."
    )
    store.add([Chunk("a-0", text, "a", "plant.md")])
    llm = ScriptedLLM(replies=["1. How hot is the reactor?\n", "451 kelvin [1].", "451 K [1]."])
    focus = SentenceFocus(embeddings=SentenceTransformerEmbeddings(), sentences=1, neighbours=0)
    agent = DecompositionAgent(llm=llm, retrievers=[FullTextRetriever(store=store)], focus=focus)
    record = AnswerCollector("decompose").extend(agent.run("How hot is the reactor?"))
    shown = "[1] (plant.md) … The Zorblax reactor runs at 451 kelvin. …\n"
    assert shown in llm.prompts[1][-1].content  # the part's answer
    assert shown in llm.prompts[2][-1].content  # the final answer
    assert record.citations[0].text == text


def test_a_sub_answer_of_a_bare_source_number_counts_as_not_found(tmp_path: Path) -> None:
    store = BM25Store(tmp_path / "bm25")
    store.add([Chunk("a-0", "The Zorblax reactor runs at 451 kelvin.", "a", "reactor.md")])
    llm = ScriptedLLM(replies=["1. How hot is the reactor?\n", "[1]", "It runs at 451 K [1]."])
    agent = DecompositionAgent(llm=llm, retrievers=[FullTextRetriever(store=store)])
    agent.run("How hot is the reactor?")
    assert "- How hot is the reactor? not found" in llm.prompts[2][-1].content  # not "[1]"


def test_a_sub_answers_sources_fit_what_a_small_context_leaves(tmp_path: Path) -> None:
    """As the final answer's do: a model of a small context was sent more sources than it
    could hold for a sub-question, and the call failed."""
    store = BM25Store(tmp_path / "bm25")
    long = " ".join(["The reactor log notes a routine check of the cooling loop."] * 20)
    store.add([Chunk(f"c-{n}", f"Reactor entry {n}. {long}", "log", "log.md") for n in range(6)])
    window = 600
    llm = ScriptedLLM(
        replies=["1. What does the reactor log say?\n", "Routine checks [1].", "Routine [1]."],
        grammar=True,
        window=window,
    )
    agent = DecompositionAgent(
        llm=llm, retrievers=[FullTextRetriever(store=store)], top_k=6, max_source_tokens=2000
    )
    agent.run("What does the reactor log say?")
    sub_answer = llm.prompts[1]
    sent = sum(llm.count_tokens(message.content) for message in sub_answer)
    assert "[1] (log.md)" in sub_answer[-1].content
    assert sent + llm.options_seen[1].max_tokens <= window


def test_a_sub_question_with_no_room_for_sources_is_not_asked_bare(tmp_path: Path) -> None:
    """Answered with no sources, the model would answer by heart, and the final answer
    would build on it."""
    store = BM25Store(tmp_path / "bm25")
    store.add([Chunk("c-0", "The reactor log notes a routine check. " * 40, "log", "log.md")])
    llm = ScriptedLLM(replies=["1. What does the log say?\n", "Nothing [1]."], grammar=True)
    llm.window = 150  # room for the prompt and the answers, none for a source
    agent = DecompositionAgent(llm=llm, retrievers=[FullTextRetriever(store=store)], top_k=1)
    record = AnswerCollector("decompose").extend(agent.run("What does the log say?"))
    assert len(llm.prompts) == 2  # the split, then the final answer: no bare sub-answer
    assert "- What does the log say? not found" in llm.prompts[1][-1].content
    assert record.answer
