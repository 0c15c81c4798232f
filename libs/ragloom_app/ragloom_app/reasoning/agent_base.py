"""What the agent modes share: a base class, their tools for one request, common settings."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from theflow import Param

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.tools import BaseTool, ToolContext
from ragloom.events import Event
from ragloom.llms.base import ChatLLM
from ragloom.retrieval import Retriever, SentenceFocus
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState, SettingSpec

__all__ = [
    "AgentReasoning",
    "count_setting",
    "docsearch_top_k_setting",
    "focus_setting",
    "llm_name_setting",
    "request_tools",
    "steps_setting",
]


class AgentReasoning(BaseReasoning):
    """A mode whose work is done by one agent of :mod:`ragloom.agents`, built per request.

    Subclasses build the agent in ``get_pipeline``; answering is streaming its events.
    """

    agent: Any = Param(help="The agent that answers this request (anything with stream).")

    def stream(self, question: str) -> Iterator[Event]:
        return self.agent.stream(question)


def request_tools(
    state: ReasoningState,
    retrievers: Sequence[Retriever],
    llm: ChatLLM,
    ledger: EvidenceLedger,
    top_k: int,
    focus_sentences: int = 0,
) -> dict[str, BaseTool]:
    """Fresh tools for one request: every registered one, ``docsearch`` over ``retrievers``.

    ``focus_sentences`` > 0: docsearch shows that many sentences nearest its query (with
    their neighbours) instead of whole passages, if the app has an embedding model."""
    focus = None
    if focus_sentences > 0 and state.get_embeddings is not None:
        focus = SentenceFocus(embeddings=state.get_embeddings(), sentences=focus_sentences)
    context = ToolContext(
        llm=llm, retrievers=list(retrievers), ledger=ledger, top_k=top_k, focus=focus
    )
    return state.tools.build(context)


def count_setting(label: str, default: int, minimum: int, maximum: int, info: str) -> SettingSpec:
    """A whole number between ``minimum`` and ``maximum``."""
    return {
        "name": label,
        "value": default,
        "component": "number",
        "minimum": minimum,
        "maximum": maximum,
        "info": info,
    }


def docsearch_top_k_setting(default: int) -> SettingSpec:
    """How many passages one docsearch call returns."""
    return count_setting(
        "Passages per search", default, 1, 10, "Passages one docsearch call returns to the agent."
    )


def focus_setting(default: int) -> SettingSpec:
    """How many sentences of the found passages docsearch shows (0: whole passages)."""
    return count_setting(
        "Sentences shown per search",
        default,
        0,
        30,
        "Docsearch shows the sentences of its passages nearest the query, each with its "
        "neighbours: shorter prompts. 0 shows whole passages.",
    )


def steps_setting(label: str, default: int, info: str, maximum: int = 10) -> SettingSpec:
    """A bounded count of steps."""
    return count_setting(label, default, 1, maximum, info)


def llm_name_setting(label: str, role: str) -> SettingSpec:
    """The name of an LLM in ``LLMS`` for one role (empty: the chat's LLM)."""
    return {
        "name": label,
        "value": "",
        "component": "text",
        "info": f"Name of an LLM in LLMS for the {role}; empty uses the chat's LLM.",
    }
