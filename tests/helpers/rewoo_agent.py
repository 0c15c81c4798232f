"""A ReWOO agent over a two-document index and a scripted LLM, as the agent tests use it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo import ReWOOAgent, ReWOOPlanner, ReWOOSolver
from ragloom.agents.tools import BaseTool, ToolContext, ToolRegistry, ToolResult
from ragloom.retrieval import FullTextRetriever
from ragloom.schema import Chunk
from ragloom.stores import BM25Store
from tests.helpers.scripted_llm import ScriptedLLM

__all__ = ["ShoutTool", "reactor_retriever", "rewoo_agent"]


class ShoutTool(BaseTool):
    """A plugin's tool as written before tools said what they take: no kinds, no checker."""

    class Arguments(BaseModel):
        text: str

    name: ClassVar[str] = "shout"
    description: ClassVar[str] = "Upper-cases its text."
    sandboxed: ClassVar[bool] = False  # defined in a test helper: it runs in this process

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, ShoutTool.Arguments)
        return ToolResult(content=arguments.text.upper())


def reactor_retriever(folder: Path) -> FullTextRetriever:
    """Full-text search over a reactor's temperature (``a-0``) and a canteen's hours."""
    store = BM25Store(folder / "bm25")
    store.add(
        [
            Chunk("a-0", "The Zorblax reactor runs at 451 kelvin.", "a", "reactor.md"),
            Chunk("b-0", "The canteen opens at eight in the morning.", "b", "canteen.md"),
        ]
    )
    return FullTextRetriever(store=store)


def rewoo_agent(
    llm: ScriptedLLM, retriever: FullTextRetriever, **tools: type[BaseTool]
) -> ReWOOAgent:
    """The built-in tools plus ``tools``, planner and solver on ``llm``."""
    registry = ToolRegistry()
    for tool in tools.values():
        registry.register(tool)
    ledger = EvidenceLedger()
    built = registry.build(ToolContext(llm=llm, retrievers=[retriever], ledger=ledger))
    planner = ReWOOPlanner(llm=llm, tools=[registry.get(n) for n in registry.names()])
    return ReWOOAgent(
        planner=planner,
        solver=ReWOOSolver(llm=llm),
        tools=built,
        ledger=ledger,
        # Short for the hanging tool, long enough for a sandbox worker's first imports.
        tool_timeout=2.0,
    )
