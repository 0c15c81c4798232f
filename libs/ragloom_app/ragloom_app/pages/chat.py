"""The chat page: joins a reasoning mode with the retrievers of every index, and answers."""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from ragloom.events import AnswerCollector, Event, StepFinished
from ragloom.llms.base import ChatMessage
from ragloom_app.app import BaseApp
from ragloom_app.conversations import ConversationStore
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState

__all__ = ["AnswerFinished", "ChatPage", "UnknownModeError"]

logger = logging.getLogger(__name__)


class UnknownModeError(KeyError):
    """No reasoning mode has that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown mode"


class AnswerFinished:
    """The last item of :meth:`ChatPage.ask`: the whole answer record."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record


class ChatPage:
    """What the chat screen does, for the UI, the CLI and tests alike."""

    def __init__(self, app: BaseApp) -> None:
        self.app = app
        self.conversations = ConversationStore(app.engine)

    def reasoning_class(self, mode: str | None) -> type[BaseReasoning]:
        """The registered reasoning class for ``mode`` (default: ``DEFAULT_REASONING``)."""
        mode = mode or self.app.settings.default_reasoning
        try:
            return self.app.reasonings[mode]
        except KeyError:
            known = ", ".join(self.app.reasonings)
            raise UnknownModeError(f"unknown mode {mode!r} (available: {known})") from None

    def create_pipeline(
        self,
        mode: str | None,
        settings: Mapping[str, Any] | None = None,
        state: ReasoningState | None = None,
        indices: Collection[str] | None = None,
        selected_sources: Mapping[str, Collection[str]] | None = None,
    ) -> BaseReasoning:
        """The selected reasoning class, given the retrievers of every index.

        ``indices`` limits retrieval to the named indices; ``selected_sources`` maps an
        index name to the source ids the user picked in it (an index left out of the
        mapping is searched whole; one mapped to no source is not searched at all).
        The indices get the mode's settings plus ``llm``, the request's model, for
        settings such as reranking that need one.
        """
        cls = self.reasoning_class(mode)
        values = cls.resolve_settings(settings)
        state = state or self.app.reasoning_state()
        index_settings = {**values, "llm": state.llm}
        retrievers = []
        for index in self.app.indices.indices:
            if indices is not None and index.name not in indices:
                continue
            chosen = (selected_sources or {}).get(index.name)
            if chosen is not None and not chosen:
                continue
            retrievers.extend(index.get_retriever_pipelines(index_settings, chosen))
        return cls.get_pipeline(values, state, retrievers)

    def ask(
        self,
        question: str,
        *,
        mode: str | None = None,
        settings: Mapping[str, Any] | None = None,
        conversation_id: str | None = None,
        indices: Collection[str] | None = None,
        selected_sources: Mapping[str, Collection[str]] | None = None,
    ) -> Iterator[Event | AnswerFinished]:
        """Answer ``question``, streaming events; saves both turns to the conversation.

        ``indices`` and ``selected_sources`` limit the search as in
        :meth:`create_pipeline`. The last item is :class:`AnswerFinished` with the record
        ``ask --json`` prints.
        """
        mode_id = mode or self.app.settings.default_reasoning
        started = time.perf_counter()
        history = []
        if conversation_id:
            history = [
                ChatMessage(m["role"], m["content"])
                for m in self.conversations.messages(conversation_id)
            ]
            self.conversations.add_message(conversation_id, "user", question)
        state = self.app.reasoning_state(conversation_id=conversation_id, history=history)
        pipeline = self.create_pipeline(mode_id, settings, state, indices, selected_sources)
        collector = AnswerCollector(mode=mode_id)
        try:
            for event in pipeline.stream(question):
                collector.add(event)
                yield event
        except Exception as exc:
            logger.exception("mode %s failed on %r", mode_id, question)
            failure = StepFinished("error", 0.0, error=f"{type(exc).__name__}: {exc}")
            collector.add(failure)
            yield failure
            collector.answer = collector.answer or f"Sorry, answering failed: {exc}"
        record = collector.to_dict(time.perf_counter() - started)
        if conversation_id:
            self.conversations.add_message(
                conversation_id,
                "assistant",
                record["answer"],
                mode=mode_id,
                citations=collector.citations,
            )
        yield AnswerFinished(record)
