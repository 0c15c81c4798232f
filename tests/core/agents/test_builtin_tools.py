"""docsearch searches the request's retrievers; llm makes a real call through ChatLLM."""

from pathlib import Path

from ragloom.agents.tools import DocSearchTool, LLMTool
from ragloom.retrieval import FullTextRetriever
from ragloom.schema import Chunk
from ragloom.stores import BM25Store
from tests.helpers.scripted_llm import ScriptedLLM


def _retriever(tmp_path: Path) -> FullTextRetriever:
    store = BM25Store(tmp_path / "bm25")
    store.add(
        [
            Chunk("a-0", "The Zorblax reactor runs at 451 kelvin.", "a", "reactor.md"),
            Chunk("b-0", "The canteen opens at eight in the morning.", "b", "canteen.md", page=2),
        ]
    )
    return FullTextRetriever(store=store)


def test_docsearch_returns_passages_with_their_sources(tmp_path: Path) -> None:
    result = DocSearchTool([_retriever(tmp_path)], top_k=2).invoke("reactor kelvin")
    assert result.ok
    assert result.content.splitlines()[0] == "(reactor.md) The Zorblax reactor runs at 451 kelvin."
    assert result.sources[0].chunk.id == "a-0"


def test_docsearch_trims_to_its_token_budget_and_says_when_nothing_matches(tmp_path: Path) -> None:
    tool = DocSearchTool([_retriever(tmp_path)], top_k=2, max_tokens=5)
    assert len(tool.invoke("reactor canteen").sources) == 1
    assert tool.invoke("xylophone").content.startswith("No passage")
    assert tool.invoke('{"query": ""}').error.code == "invalid_arguments"


def test_llm_tool_asks_the_model_and_records_usage() -> None:
    llm = ScriptedLLM(replies=["Lund"])
    tool = LLMTool(llm)
    result = tool.invoke("In which city was the reactor built? It was built in Lund.")
    assert result.content == "Lund"
    assert llm.prompts[0][-1].content.startswith("In which city")
    assert result.usage is not None and result.usage.completion_tokens == 1
