"""The chat page: joins a reasoning mode with the retrievers of every index, and answers.

What one question may cost is bounded here, for the UI, the CLI and the API alike: its
length (``MAX_QUESTION_CHARS``) and its wall time (``ANSWER_DEADLINE_SECONDS``, checked
at every event the mode streams, so between tokens too). An index whose retrievers cannot
be built, or whose search fails, is left out of that answer, which says so in its steps;
a mode that fails ends its answer with words for the user and a log reference.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any, cast

from theflow import Param

from ragloom.events import AnswerCollector, AnswerRecord, Event
from ragloom.llms.base import ChatMessage, Role
from ragloom.llms.deadline import UnfinishedCalls
from ragloom.retrieval import Retriever
from ragloom.schema import RetrievedChunk
from ragloom_app.app import BaseApp
from ragloom_app.conversations import (
    ConversationBusyError,
    ConversationStore,
    UnknownConversationError,
)
from ragloom_app.db.models import LOCAL_USER
from ragloom_app.errors import UserFacingError, user_error
from ragloom_app.index.base import BaseIndex
from ragloom_app.index.manager import UnknownIndexError
from ragloom_app.index.settings import (
    IndexSettingsError,
    check_index_names,
    index_request_values,
    moved_mode_settings,
)
from ragloom_app.index.terms import searched_terms
from ragloom_app.pages.answer_stream import LeftOut, MalformedEventError, bounded_events
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState

__all__ = [
    "AnswerFinished",
    "ChatPage",
    "ConversationBusyError",
    "EmptyQuestionError",
    "LeftOut",
    "MalformedEventError",
    "QuestionTooLongError",
    "UnknownConversationError",
    "UnknownModeError",
]

logger = logging.getLogger(__name__)


class UnknownModeError(UserFacingError, KeyError):
    """No reasoning mode has that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown mode"


class EmptyQuestionError(UserFacingError, ValueError):
    """A question with no words."""


class QuestionTooLongError(UserFacingError, ValueError):
    """The question is longer than ``MAX_QUESTION_CHARS``."""


@dataclass(frozen=True)
class AnswerFinished:
    """The last item of :meth:`ChatPage.ask`: the whole answer, typed
    (``record.to_dict()`` is what ``ask --json`` prints)."""

    record: AnswerRecord


class _ReportingRetriever(Retriever):
    """Searches ``inner``; a search that raises is noted in ``left_out`` and raised on,
    so the merge of every index's results goes on without it and the answer says so."""

    inner: Retriever = Param(help="The index's retriever.")
    index_name: str = Param("", help="The index it searches.")
    left_out: list = Param(default_callback=lambda _: [], help="Where failures are noted.")

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def comparable_scores(self) -> bool:
        return self.inner.comparable_scores

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        try:
            return self.inner(query, top_k=top_k, source_ids=source_ids)
        except Exception as exc:
            failure = user_error(exc, f"Searching the index {self.index_name!r}", log=logger)
            self.left_out.append(LeftOut(self.index_name, failure.message))
            raise


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
        left_out: list[LeftOut] | None = None,
        *,
        index_settings: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> BaseReasoning:
        """The selected reasoning class, given the retrievers of every index.

        ``indices`` limits retrieval to the named indices; ``selected_sources`` maps an
        index name to the source ids the user picked in it (an index left out of the
        mapping is searched whole; one mapped to no source is not searched at all).

        ``index_settings`` maps an index name to its own settings for this request (its
        type's ``get_user_settings``); each index gets them resolved, plus ``llm``, the
        request's model (for reranking), and the mode's ``top_k``. A value an index does
        not allow, or settings for no such index, raise :class:`IndexSettingsError`. A
        mode setting the mode does not declare but an index does (``retrieval_mode``,
        ``mmr``, ``mmr_lambda``, ``rerank``: FullQA's until they moved to the file index)
        still reaches that index, with a warning in the log.

        The pipeline's ``state.find_terms`` looks terms up in the same indices and sources
        (:func:`~ragloom_app.index.terms.searched_terms`), for the check before answering.

        An index whose ``get_retriever_pipelines`` raises is left out (unless every index
        does: then the first error is raised). Given a ``left_out`` list, each index left
        out is noted there, now or when its search fails during the answer.
        """
        cls = self.reasoning_class(mode)
        values = cls.resolve_settings(settings)
        state = state or self.app.reasoning_state()
        given = index_settings or {}
        # The names the request may search: an error lists no index it may not read.
        names = [index.name for index in self.app.indices.indices]
        check_index_names(given, names if indices is None else [n for n in names if n in indices])
        moved = moved_mode_settings(cls.get_user_settings(), settings)
        request = {"top_k": values["top_k"]} if "top_k" in values else {}
        retrievers: list[Retriever] = []
        searched: list[tuple[BaseIndex, Collection[str] | None]] = []
        failures: list[Exception] = []
        for index in self.app.indices.indices:
            if indices is not None and index.name not in indices:
                continue
            chosen = (selected_sources or {}).get(index.name)
            if chosen is not None and not chosen:
                continue
            try:
                own = index_request_values(type(index), index.name, given.get(index.name), moved)
                found = index.get_retriever_pipelines({**request, **own, "llm": state.llm}, chosen)
            except IndexSettingsError:
                raise  # the request's own mistake: refused, not an index left out
            except Exception as exc:
                failure = user_error(exc, f"Searching the index {index.name!r}", log=logger)
                failures.append(exc)
                if left_out is not None:
                    left_out.append(LeftOut(index.name, failure.message))
                continue
            if left_out is not None:
                found = [
                    _ReportingRetriever(inner=r, index_name=index.name, left_out=left_out)
                    for r in found
                ]
            retrievers.extend(found)
            searched.append((index, chosen))
        if failures and not retrievers:
            raise failures[0]
        state = replace(state, find_terms=searched_terms(searched))
        return cls.get_pipeline(values, state, retrievers)

    def readable_indices(self, user_id: str, wanted: Collection[str] | None = None) -> list[str]:
        """The names of the indices ``user_id`` may read, of ``wanted`` (None: all of them);
        a wanted name it may not read raises :class:`UnknownIndexError`, as an unknown one."""
        readable = [index.name for index in self.app.indices.readable_by(user_id)]
        if wanted is None:
            return readable
        for name in wanted:
            if name not in readable:
                raise UnknownIndexError(f"no index named {name!r}")
        return [name for name in readable if name in wanted]

    def check_question(self, question: str) -> None:
        """Raise :class:`QuestionTooLongError` past ``MAX_QUESTION_CHARS``, and
        :class:`EmptyQuestionError` for a question of nothing but spaces."""
        if not question.strip():
            raise EmptyQuestionError("the question is empty: ask something")
        limit = self.app.settings.max_question_chars
        if len(question) > limit:
            raise QuestionTooLongError(
                f"the question is {len(question):,} characters long; the limit is "
                f"{limit:,} (MAX_QUESTION_CHARS): shorten it"
            )

    def ask(
        self,
        question: str,
        *,
        mode: str | None = None,
        settings: Mapping[str, Any] | None = None,
        conversation_id: str | None = None,
        indices: Collection[str] | None = None,
        selected_sources: Mapping[str, Collection[str]] | None = None,
        index_settings: Mapping[str, Mapping[str, Any]] | None = None,
        history: Sequence[ChatMessage] | None = None,
        user_id: str = LOCAL_USER,
    ) -> Iterator[Event | AnswerFinished]:
        """Answer ``question``, streaming events; saves both turns to the conversation.

        The earlier turns are the conversation's, or ``history`` when there is no
        ``conversation_id`` (a client that keeps its own, as OpenAI's API does).

        It acts for ``user_id``: only the indices that user may read are searched (an
        index it may not read is unknown to it), and the conversation must be its own.

        ``indices`` and ``selected_sources`` limit the search, and ``index_settings``
        set how each index searches, as in :meth:`create_pipeline`. The last item is
        :class:`AnswerFinished` with the :class:`~ragloom.events.AnswerRecord` (whose
        ``to_dict()`` ``ask --json`` prints). A question past ``MAX_QUESTION_CHARS``, an
        unknown mode, settings an index refuses or an LLM the user may not choose raise
        before anything is saved; an answer past ``ANSWER_DEADLINE_SECONDS`` stops and says
        it was cut short.
        """
        self.check_question(question)
        indices = self.readable_indices(user_id, indices)
        if conversation_id and self.conversations.get(conversation_id, user_id) is None:
            raise UnknownConversationError(f"no conversation {conversation_id!r}")
        with self._held(conversation_id, user_id):
            yield from self._answer(
                question,
                mode or self.app.settings.default_reasoning,
                settings,
                conversation_id,
                indices,
                selected_sources,
                index_settings,
                list(history or []),
            )

    def _held(self, conversation_id: str | None, user_id: str) -> AbstractContextManager[None]:
        """The conversation held while its answer is written (nothing without one):
        :class:`ConversationBusyError` while another answer is written in it."""
        if not conversation_id:
            return nullcontext()
        # The deadline stops the answer; the minute after it is for storing it.
        seconds = self.app.settings.answer_deadline_seconds + 60
        return self.conversations.answering(conversation_id, user_id, seconds)

    def _answer(
        self,
        question: str,
        mode_id: str,
        settings: Mapping[str, Any] | None,
        conversation_id: str | None,
        indices: Collection[str] | None,
        selected_sources: Mapping[str, Collection[str]] | None,
        index_settings: Mapping[str, Mapping[str, Any]] | None,
        history: list[ChatMessage],
    ) -> Iterator[Event | AnswerFinished]:
        """:meth:`ask`'s answer, once the question is checked and its conversation held."""
        started = time.perf_counter()
        if conversation_id:
            # Only turns are stored, so a stored role is one ChatMessage takes.
            history = [
                ChatMessage(cast(Role, m.role), m.content)
                for m in self.conversations.messages(conversation_id)
            ]
        unfinished = UnfinishedCalls()  # the calls the answer cuts short still count
        state = self.app.reasoning_state(
            conversation_id=conversation_id,
            history=history,
            deadline=time.monotonic() + self.app.settings.answer_deadline_seconds,
            unfinished=unfinished,
        )
        left_out: list[LeftOut] = []
        pipeline = self.create_pipeline(
            mode_id,
            settings,
            state,
            indices,
            selected_sources,
            left_out,
            index_settings=index_settings,
        )
        if conversation_id:
            self._save(conversation_id, "user", question)
        collector = AnswerCollector(mode=mode_id)
        limit = self.app.settings.answer_deadline_seconds
        events = bounded_events(
            pipeline.stream(question), collector, left_out, started, limit, unfinished
        )
        try:
            for event in events:
                collector.add(event)
                yield event
        except GeneratorExit:
            # The caller stopped listening (an API client that left): the question's turn
            # is stored, so its answer is too, as far as it went, saying so.
            events.close()
            if conversation_id:
                self._save_stopped(conversation_id, collector.answer, mode_id)
            raise
        record = collector.record(time.perf_counter() - started)
        if conversation_id:
            self._save(
                conversation_id,
                "assistant",
                record.answer,
                mode=mode_id,
                citations=record.citations,
                grounding=record.grounding,
            )
        yield AnswerFinished(record)

    def _save(self, conversation_id: str, role: str, content: str, **details: Any) -> None:
        """Add a turn; :class:`UnknownConversationError` if the conversation was deleted
        meanwhile (by its owner, in another tab or through the API)."""
        try:
            self.conversations.add_message(conversation_id, role, content, **details)
        except KeyError:
            raise UnknownConversationError(
                f"the conversation {conversation_id!r} was deleted while it was answered: "
                "nothing more was saved"
            ) from None

    def _save_stopped(self, conversation_id: str, answer: str, mode_id: str) -> None:
        """Store an answer its caller stopped listening to, as far as it went, saying so;
        a failure is logged (the caller has gone: nobody else would hear of it)."""
        note = "(Stopped before the answer was finished.)"
        text = f"{answer.strip()}\n\n{note}" if answer.strip() else note
        try:
            self._save(conversation_id, "assistant", text, mode=mode_id)
        except Exception:
            logger.warning("the stopped answer could not be stored", exc_info=True)
