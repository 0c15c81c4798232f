"""The reasoning plugin slot: a class that turns a question into a stream of events.

The app lists reasoning classes in ``REASONINGS`` (flowsettings.py). For each question,
``ChatPage.create_pipeline`` calls :meth:`BaseReasoning.get_pipeline` with the user's
settings for that mode, the request's state and the retrievers of every index; the
pipeline then streams typed events (:mod:`ragloom.events`) that the UI and CLI render.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragloom.agents.tools import ToolRegistry
from ragloom.base import BaseComponent
from ragloom.embeddings.base import Embeddings
from ragloom.events import Event
from ragloom.llms.base import ChatLLM, ChatMessage
from ragloom.qa.precheck import TermLookup
from ragloom.retrieval import Retriever, SentenceFocus

__all__ = ["BaseReasoning", "ReasoningInfo", "ReasoningState", "SettingSpec"]

SettingSpec = dict[str, Any]
"""A user setting that describes its own UI: ``name`` (label), ``value`` (default),
``component`` (``number``, ``text``, ``checkbox`` or ``dropdown``), optional ``choices``
and ``info`` (help text)."""


@dataclass(frozen=True)
class ReasoningInfo:
    """How a reasoning mode presents itself: a stable id, a name and a description."""

    id: str
    name: str
    description: str


@dataclass
class ReasoningState:
    """What the app knows of one request: its LLM, the conversation so far, the tools
    agents may use, ``llm_named`` to get another LLM by name (in the app, only one the
    admin lets users choose: ``BaseApp.selectable_llm``), ``get_embeddings`` to get
    the app's embedding model, ``find_terms`` to ask whether terms occur in the indices
    and sources the request may search (set by the chat page; ``None``: nobody can tell),
    ``check_grounding``: whether the app checks answers against their passages
    (``GROUNDING_CHECK``; a mode's own setting may turn it off), ``reasoning_named``
    to get another registered mode's class by id (for modes that hand a question on, such
    as ``auto``; raises ``KeyError`` for an unknown id), and ``deadline``, past which a
    mode's tool calls should not run."""

    llm: ChatLLM
    conversation_id: str | None = None
    history: list[ChatMessage] = field(default_factory=list)
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    llm_named: Callable[[str], ChatLLM] | None = None
    get_embeddings: Callable[[], Embeddings] | None = None  # the app's, loaded on first use
    # The sentence focus's (FOCUS_EMBEDDING); None: get_embeddings.
    get_focus_embeddings: Callable[[], Embeddings] | None = None
    find_terms: TermLookup | None = None  # in the indices and sources the request searches
    check_grounding: bool = True
    reasoning_named: Callable[[str], type[BaseReasoning]] | None = None
    # A time.monotonic() time: the answer's deadline (ANSWER_DEADLINE_SECONDS), which the
    # chat page enforces between events; agents cut their tool calls to it too.
    deadline: float | None = None

    def grounding_for(self, values: Mapping[str, Any]) -> bool:
        """Whether this request's answer is checked: the app's ``GROUNDING_CHECK`` and the
        mode's ``check_grounding`` setting (``reasoning.settings.grounding_setting``)."""
        return self.check_grounding and bool(values.get("check_grounding", True))

    def llm_for(self, name: str | None) -> ChatLLM:
        """The LLM named ``name`` (empty or None: the request's own); ``llm_named`` raises
        for a name the user may not choose."""
        if not name:
            return self.llm
        if self.llm_named is None:
            raise ValueError(f"no LLM named {name!r} is available here")
        return self.llm_named(name)

    def sentence_focus(self, sentences: int) -> SentenceFocus | None:
        """A focus on the ``sentences`` nearest a query, by the app's focus embedding model
        (``FOCUS_EMBEDDING``, else its embedding model); ``None`` (whole passages) for 0 or
        when the app has no embedding model."""
        chosen = self.get_focus_embeddings or self.get_embeddings
        if sentences <= 0 or chosen is None:
            return None
        return SentenceFocus(embeddings=chosen(), sentences=sentences)


class BaseReasoning(BaseComponent):
    """A reasoning mode. Subclasses implement the four methods below."""

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        """The mode's id (used by ``--mode`` and the selector), name and description."""
        raise NotImplementedError(f"{cls.__name__} must implement get_info()")

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        """The settings a user may change for this mode, keyed by setting id."""
        return {}

    @classmethod
    def get_pipeline(
        cls,
        settings: Mapping[str, Any],
        state: ReasoningState,
        retrievers: Sequence[Retriever],
    ) -> BaseReasoning:
        """A ready-to-run pipeline for one request."""
        raise NotImplementedError(f"{cls.__name__} must implement get_pipeline()")

    def stream(self, question: str) -> Iterator[Event]:
        """Answer ``question``, yielding events as they happen."""
        raise NotImplementedError(f"{type(self).__name__} must implement stream()")

    @classmethod
    def resolve_settings(cls, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The defaults of :meth:`get_user_settings` with the given values on top."""
        values = {key: spec.get("value") for key, spec in cls.get_user_settings().items()}
        values.update({k: v for k, v in (given or {}).items() if k in values})
        return values

    def run(self, question: str) -> list[Event]:
        """Every event of :meth:`stream`, as a list."""
        return list(self.stream(question))
