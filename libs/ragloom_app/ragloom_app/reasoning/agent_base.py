"""What the agent modes share: a base class and their tools for one request."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from theflow import Param

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.tools import BaseTool, ToolContext
from ragloom.events import Event
from ragloom.llms.base import ChatLLM
from ragloom.qa.precheck import TermLookup
from ragloom.retrieval import Retriever
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState
from ragloom_app.reasoning.precheck import checked_before_agent, precheck_lookup

__all__ = ["AgentReasoning", "request_tools"]


class AgentReasoning(BaseReasoning):
    """A mode whose work is done by one agent of :mod:`ragloom.agents`, built per request.

    Subclasses build the agent in ``get_pipeline`` (passing :meth:`precheck_params`);
    answering is streaming its events, once the check before answering let it run.
    """

    agent: Any = Param(help="The agent that answers this request (anything with stream).")
    retrievers: list[Retriever] = Param(
        default_callback=lambda _: [],
        help="Where a declined question's closest passages come from.",
    )
    find_terms: TermLookup | None = Param(
        None, help="Looks terms up in the searched indices (None: no check before answering)."
    )
    precheck_top_k: int = Param(3, help="Closest passages a declined question cites.")

    def stream(self, question: str) -> Iterator[Event]:
        """The agent's events, after the check before answering (which may decline)."""
        return checked_before_agent(
            question,
            self.agent.stream(question),
            self.find_terms,
            self.retrievers,
            self.precheck_top_k,
        )

    @classmethod
    def precheck_params(
        cls, values: Mapping[str, Any], state: ReasoningState, retrievers: Sequence[Retriever]
    ) -> dict[str, Any]:
        """The check's params for ``cls(...)``, from the mode's resolved ``values``."""
        return {"retrievers": list(retrievers), "find_terms": precheck_lookup(values, state)}


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
