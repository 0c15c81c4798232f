"""AnswerCollector folds a stream of events into the `ask --json` record."""

from ragloom.events import (
    AnswerCollector,
    AnswerDelta,
    Citation,
    CitationsFound,
    LLMCallFinished,
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
