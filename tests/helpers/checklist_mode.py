"""A reasoning mode of a plugin, for the tests: its own plan and its own labelled steps.

Nothing of Ragloom knows its step names (``C1``, ``C2``): the chat shows what the mode's
``PlanItem`` and ``StepStarted`` say, as it does for a built-in mode. ``gate`` holds the
mode in its first step until it is set, so a test can see that step's status in the chat.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from theflow import Param

from ragloom.events import Event, PlanCreated, PlanItem, StepFinished, StepStarted
from ragloom.llms.base import ChatLLM
from ragloom.qa import CitedAnswerer
from ragloom.retrieval import Retriever, retrieve_from_all
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState

__all__ = ["CHECKLIST_PLAN", "SEARCH_LABEL", "ChecklistReasoning"]

CHECKLIST_PLAN = [
    PlanItem("C1", "Find the passages", label="Look the question up in the files"),
    PlanItem("C2", "Answer from them", depends_on=("C1",), label="Answer citing what was found"),
]
SEARCH_LABEL = "Looking the question up in the files"
GATE_SECONDS = 30.0
"""Longest a held first step waits for its gate."""
GATES: dict[str, threading.Event] = {}
"""A test puts a cleared event under ``checklist`` to hold the mode's first step."""


class ChecklistReasoning(BaseReasoning):
    """Plans a search and an answer, searches every index, answers citing what it found."""

    llm: ChatLLM = Param(help="Writes the answer.")
    retrievers: list[Retriever] = Param(default_callback=lambda _: [], help="Every index's.")
    gate: threading.Event | None = Param(None, help="Set: the first step goes on.")

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo("checklist", "Checklist (plugin)", "Plans, searches, answers.")

    @classmethod
    def get_pipeline(
        cls, settings: Mapping[str, Any], state: ReasoningState, retrievers: Sequence[Retriever]
    ) -> ChecklistReasoning:
        return cls(llm=state.llm, retrievers=list(retrievers), gate=GATES.get("checklist"))

    def stream(self, question: str) -> Iterator[Event]:
        yield PlanCreated(list(CHECKLIST_PLAN), raw="C1: search\nC2: answer")
        started = time.perf_counter()
        yield StepStarted("C1", {"query": question}, label=SEARCH_LABEL)
        if self.gate is not None:
            self.gate.wait(GATE_SECONDS)
        hits = retrieve_from_all(self.retrievers, question, 3)
        yield StepFinished(
            "C1", time.perf_counter() - started, output={"found": len(hits)}, label=SEARCH_LABEL
        )
        yield from CitedAnswerer(llm=self.llm).stream(question, hits)
