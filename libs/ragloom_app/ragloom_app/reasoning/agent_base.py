"""What the agent modes share: a base class and their tools for one request."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from theflow import Param

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.tools import BaseTool, ToolContext
from ragloom.events import Event
from ragloom.llms.base import ChatLLM
from ragloom.retrieval import Retriever
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState

__all__ = ["AgentReasoning", "request_tools"]


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
    focus = state.sentence_focus(focus_sentences)
    context = ToolContext(
        llm=llm, retrievers=list(retrievers), ledger=ledger, top_k=top_k, focus=focus
    )
    return state.tools.build(context)
