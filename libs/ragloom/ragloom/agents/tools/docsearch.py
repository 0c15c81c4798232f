"""The ``docsearch`` tool: the request's retrievers, as a tool an agent can call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from pydantic import BaseModel, Field

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.tools.base import BaseTool, ResultKind, ToolContext, ToolResult
from ragloom.agents.tools.cancel import cancel_requested, raise_if_cancelled
from ragloom.qa.citations import passage_text
from ragloom.retrieval import Retriever, SentenceFocus, retrieve_from_all
from ragloom.retrieval.focus import Spans
from ragloom.schema import RetrievedChunk

__all__ = ["DocSearchTool"]


class DocSearchTool(BaseTool):
    """Searches the selected indices; the result lists passages with their sources.

    With a ``ledger``, each passage is shown with its request-wide number (``[3] (file)
    text``) so that an answer can cite it; without one, as ``(file) text``. With a
    ``focus``, a passage shows only its sentences nearest the query (a passage with none
    of them is left out).

    It holds the request's retrievers and ledger, so it runs in the agent's process
    (``sandboxed = False``); told to stop, it stops before its next retriever and never
    numbers passages in the ledger after its call has timed out.
    """

    class Arguments(BaseModel):
        """What to search for."""

        query: str = Field(min_length=1, description="What to look for in the documents.")

    name: ClassVar[str] = "docsearch"
    description: ClassVar[str] = (
        "Search the user's documents. Input: a short search query. "
        "Output: the most relevant passages, each with its source."
    )
    sandboxed: ClassVar[bool] = False
    # Any input may be a query, even passages (they find their like): accepts everything.
    result_kind: ClassVar[ResultKind] = "passages"

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        *,
        top_k: int = 3,
        count_tokens: Callable[[str], int] | None = None,
        max_tokens: int = 600,
        ledger: EvidenceLedger | None = None,
        focus: SentenceFocus | None = None,
    ) -> None:
        self.retrievers = list(retrievers)
        self.top_k = top_k
        self.count_tokens = count_tokens or (lambda text: max(1, len(text) // 4))
        self.max_tokens = max_tokens
        self.ledger = ledger
        self.focus = focus

    @classmethod
    def from_context(cls, context: ToolContext) -> DocSearchTool:
        return cls(
            context.retrievers,
            top_k=context.top_k,
            count_tokens=context.llm.count_tokens,
            max_tokens=context.observation_tokens,
            ledger=context.ledger,
            focus=context.focus,
        )

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, DocSearchTool.Arguments)
        hits = retrieve_from_all(
            self.retrievers, arguments.query, self.top_k, stop=cancel_requested
        )
        raise_if_cancelled()
        if not hits:
            return ToolResult(content="No passage in the documents matches this query.")
        shown = self.focus.run(arguments.query, hits) if self.focus else [None] * len(hits)
        kept: list[RetrievedChunk] = []
        kept_spans: list[Spans | None] = []
        lines: list[str] = []
        used = 0
        for hit, spans in zip(hits, shown, strict=True):
            if spans == ():
                continue  # the focus kept no sentence of it
            line = passage_text(hit, spans)
            cost = self.count_tokens(line) + 2
            if kept and used + cost > self.max_tokens:
                break  # observations are trimmed to a token budget, best passages first
            kept.append(hit)
            kept_spans.append(spans)
            lines.append(line)
            used += cost
        raise_if_cancelled()  # a late call must not number passages the agent never sees
        if self.ledger is not None:
            numbers = self.ledger.add(kept, kept_spans)
            lines = [f"[{n}] {line}" for n, line in zip(numbers, lines, strict=True)]
        return ToolResult(content="\n".join(lines), sources=kept)
