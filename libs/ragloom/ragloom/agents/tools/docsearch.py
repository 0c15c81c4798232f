"""The ``docsearch`` tool: the request's retrievers, as a tool an agent can call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from pydantic import BaseModel, Field

from ragloom.agents.tools.base import BaseTool, ToolResult
from ragloom.retrieval import Retriever
from ragloom.schema import RetrievedChunk

__all__ = ["DocSearchTool"]


def _merge(results: Sequence[Sequence[RetrievedChunk]], top_k: int) -> list[RetrievedChunk]:
    best: dict[str, RetrievedChunk] = {}
    for hits in results:
        for hit in hits:
            if hit.chunk.id not in best or hit.score > best[hit.chunk.id].score:
                best[hit.chunk.id] = hit
    return sorted(best.values(), key=lambda h: (-h.score, h.chunk.id))[:top_k]


class DocSearchTool(BaseTool):
    """Searches the selected indices; the result lists passages with source ids."""

    class Arguments(BaseModel):
        """What to search for."""

        query: str = Field(min_length=1, description="What to look for in the documents.")

    name: ClassVar[str] = "docsearch"
    description: ClassVar[str] = (
        "Search the user's documents. Input: a short search query. "
        "Output: the most relevant passages, each with its source."
    )

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        *,
        top_k: int = 3,
        count_tokens: Callable[[str], int] | None = None,
        max_tokens: int = 600,
    ) -> None:
        self.retrievers = list(retrievers)
        self.top_k = top_k
        self.count_tokens = count_tokens or (lambda text: max(1, len(text) // 4))
        self.max_tokens = max_tokens

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, DocSearchTool.Arguments)
        hits = _merge([r(arguments.query, top_k=self.top_k) for r in self.retrievers], self.top_k)
        if not hits:
            return ToolResult(content="No passage in the documents matches this query.")
        lines: list[str] = []
        kept: list[RetrievedChunk] = []
        used = 0
        for hit in hits:
            where = hit.chunk.source_name + (f", page {hit.chunk.page}" if hit.chunk.page else "")
            line = f"({where}) {' '.join(hit.chunk.text.split())}"
            cost = self.count_tokens(line)
            if kept and used + cost > self.max_tokens:
                break  # observations are trimmed to a token budget, best passages first
            lines.append(line)
            kept.append(hit)
            used += cost
        return ToolResult(content="\n".join(lines), sources=kept)
