"""A reasoning mode that deletes the conversation it answers in, halfway through (as its
owner would, in another tab): for the tests of what the app then says and saves."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ragloom.events import AnswerDelta, Event
from ragloom.retrieval import Retriever
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState

__all__ = ["DeletesItsConversation"]


class DeletesItsConversation(BaseReasoning):
    """Deletes the conversation it answers in (as its owner would, in another tab)."""

    store: Any = None
    target: Any = None

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo("deleter", "Deleter", "Deletes its conversation mid-answer.")

    @classmethod
    def get_pipeline(
        cls, settings: Mapping[str, Any], state: ReasoningState, retrievers: Sequence[Retriever]
    ) -> BaseReasoning:
        cls.target = state.conversation_id
        return cls()

    def stream(self, question: str) -> Iterator[Event]:
        yield AnswerDelta("Half an answer")
        type(self).store.delete(type(self).target)
        yield AnswerDelta(", then the rest.")
