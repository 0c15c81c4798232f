"""AnswerCollector folds a stream of events into a typed AnswerRecord, whose dict is the
`ask --json` record."""

import json

import pytest

from ragloom.events import (
    AnswerCollector,
    AnswerDelta,
    AnswerRecord,
    AnswerUsage,
    Citation,
    CitationsFound,
    LLMCallFinished,
    PlanCreated,
    PlanItem,
    StepFinished,
    StepStarted,
)
from ragloom.llms.base import Usage


def test_record_has_answer_citations_steps_and_usage_totals() -> None:
    citation = Citation(1, "a.md", None, "text", "c1")
    events = [
        StepStarted("retrieve", {"query": "q"}),
        StepFinished("retrieve", 0.01, output=[]),
        AnswerDelta("Hello "),
        AnswerDelta("world [1]."),
        LLMCallFinished("answer", Usage(100, 40, 5, 0.5)),
        LLMCallFinished("check", Usage(50, 50, 2, 0.25)),
        CitationsFound([citation]),
        StepFinished("tool", 0.2, error="timed out"),
    ]
    record = AnswerCollector("fullqa").extend(events).to_dict(seconds=1.5)
    assert record["answer"] == "Hello world [1]."
    assert record["mode"] == "fullqa"
    assert record["citations"][0]["source"] == "a.md"
    assert [s["step"] for s in record["steps"]][:2] == ["retrieve", "retrieve"]
    assert record["steps"][-1]["error"] == "timed out"
    assert record["usage"] == {
        "prompt_tokens": 150,
        "prompt_tokens_evaluated": 90,
        "completion_tokens": 7,
        "llm_calls": 2,
        "seconds": 1.5,
    }


def test_plans_and_steps_keep_their_json_shape_with_the_labels_added() -> None:
    plan = PlanCreated(
        steps=[
            PlanItem("E1", "Find it.", tool="docsearch", input="reactor"),
            PlanItem("E2", "Convert it.", tool="calculator", input="#E1 - 1", depends_on=("E1",)),
        ],
        raw="#E1 = ...",
    )
    split = PlanCreated(steps=[PlanItem("Q1", "How hot is it?")], raw="1. How hot is it?")
    events = [
        plan,
        StepStarted("E1:docsearch", {"input": "reactor"}, label="Running #E1 (docsearch)"),
        StepFinished("E1:docsearch", 0.123456, output={"ok": True}, label="Running #E1"),
        split,
    ]
    steps = AnswerCollector("rewoo").extend(events).to_dict(0.0)["steps"]
    assert steps[0] == {
        "step": "plan",
        "event": "plan",
        "raw": "#E1 = ...",
        "repaired": False,
        "plan": [
            {"id": "E1", "label": "docsearch[reactor]", "text": "Find it.", "plan": "Find it.",
             "tool": "docsearch", "input": "reactor", "depends_on": []},
            {"id": "E2", "label": "calculator[#E1 - 1]", "text": "Convert it.",
             "plan": "Convert it.", "tool": "calculator", "input": "#E1 - 1", "depends_on": ["E1"]},
        ],
    }  # fmt: skip
    assert steps[1] == {
        "step": "E1:docsearch",
        "label": "Running #E1 (docsearch)",
        "event": "started",
        "input": {"input": "reactor"},
    }
    assert steps[2]["seconds"] == 0.1235 and steps[2]["output"] == {"ok": True}
    # A step without a tool keeps its question and has no tool key, as before.
    (question,) = steps[3]["plan"]
    assert question["question"] == "How hot is it?" and "tool" not in question
    assert [PlanItem.from_dict(item) for item in steps[0]["plan"]] == plan.steps


def test_the_record_is_typed_and_its_dict_is_the_json() -> None:
    citation = Citation(1, "a.md", 3, "text", "c1", highlight=(0, 2))
    collector = AnswerCollector("fullqa").extend(
        [
            StepStarted("retrieve"),
            AnswerDelta(" It is [1]. "),
            CitationsFound([citation]),
            LLMCallFinished("answer", Usage(10, 4, 2)),
        ]
    )
    record = collector.record(seconds=0.25)
    assert isinstance(record, AnswerRecord) and record.answer == "It is [1]."
    assert record.citations == [citation]
    assert [s.name for s in record.steps] == ["retrieve", "llm:answer"]
    assert record.usage == AnswerUsage(10, 4, 2, llm_calls=1, seconds=0.25)
    assert record.to_dict() == collector.to_dict(0.25)
    assert json.loads(json.dumps(record.to_dict()))["citations"][0]["highlight"] == [0, 2]


def test_a_citation_reads_back_from_json_of_this_or_an_earlier_version() -> None:
    citation = Citation(2, "a.pdf", 4, "text", "c2", 0.5, 1, 3, {"vector": 0.5}, (1, 3))
    again = json.loads(json.dumps(citation.to_dict()))
    assert Citation.from_dict(again) == citation
    # Before found_by and highlight were stored; a key of a later version is ignored.
    old = {"number": 1, "source": "a.md", "page": None, "text": "t", "chunk_id": "c1", "x": 1}
    assert Citation.from_dict(old) == Citation(1, "a.md", None, "t", "c1")
    with pytest.raises(ValueError, match="lacks number, chunk_id"):
        Citation.from_dict({"source": "a.md", "text": "t"})
