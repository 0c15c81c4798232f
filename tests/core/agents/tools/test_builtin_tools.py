"""docsearch searches the request's retrievers; llm makes a real call through ChatLLM;
each stops when its call is cancelled."""

import threading
import time
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from theflow import Param

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.tools import DocSearchTool, LLMTool, ToolRunner
from ragloom.agents.tools.cancel import cancellable
from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions, LLMError, LLMStreamItem
from ragloom.retrieval import FullTextRetriever, Retriever, SentenceFocus
from ragloom.schema import Chunk, RetrievedChunk
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


def test_docsearch_with_a_focus_shows_the_sentences_nearest_its_query(tmp_path: Path) -> None:
    store = BM25Store(tmp_path / "bm25")
    plant = (
        "The plant opened in 1990. The Zorblax reactor runs at 451 kelvin. "
        "Its canteen serves soup. Visitors wear a badge."
    )
    store.add(
        [Chunk("p-0", plant, "p", "plant.md"), Chunk("g-0", "The reactor garden.", "g", "g.md")]
    )
    focus = SentenceFocus(embeddings=SentenceTransformerEmbeddings(), sentences=1, neighbours=0)
    ledger = EvidenceLedger()
    tool = DocSearchTool([FullTextRetriever(store=store)], top_k=2, ledger=ledger, focus=focus)
    result = tool.invoke("How hot does the Zorblax reactor run?")
    # The garden passage had no sentence near enough: it is left out, not numbered.
    assert result.content == "[1] (plant.md) … The Zorblax reactor runs at 451 kelvin. …"
    assert [hit.chunk.text for hit in result.sources] == [plant]
    assert ledger.block().text == "[1] (plant.md) … The Zorblax reactor runs at 451 kelvin. …\n"


def test_llm_tool_asks_the_model_and_records_usage() -> None:
    llm = ScriptedLLM(replies=["Lund"])
    tool = LLMTool(llm)
    result = tool.invoke("In which city was the reactor built? It was built in Lund.")
    assert result.content == "Lund"
    assert llm.prompts[0][-1].content.startswith("In which city")
    assert result.usage is not None and result.usage.completion_tokens == 1


class _FailingLLM(ScriptedLLM):
    """An LLM whose every call fails with ``error``."""

    error: LLMError = Param(help="What every call raises.")

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        self.prompts.append(list(messages))
        raise self.error
        yield  # pragma: no cover: a generator, as real LLMs stream


def test_llm_tool_retries_only_what_may_pass_if_asked_again() -> None:
    overflow = LLMError("the prompt has 5000 tokens but the context holds 4096 (...)")
    llm = _FailingLLM(error=overflow)
    slept: list[float] = []
    call = ToolRunner(sleep=slept.append).call(LLMTool(llm), "word " * 3000)
    assert call.result.error is not None and call.result.error.code == "llm_failed"
    assert not call.result.error.retryable
    assert call.attempts == 1 and slept == [] and len(llm.prompts) == 1
    # An endpoint failing for now (a 503, no connection) is tried again.
    llm = _FailingLLM(error=LLMError("http://llm/v1 answered HTTP 503: busy", transient=True))
    call = ToolRunner(sleep=slept.append).call(LLMTool(llm), "Say hi.")
    assert call.result.error is not None and call.result.error.retryable
    assert call.attempts == 3 and slept == [0.5, 1.0]


class _BrokenRetriever(Retriever):
    """An index whose store is gone."""

    def run(
        self, query: str, top_k: int | None = None, source_ids: Collection[str] | None = None
    ) -> list[RetrievedChunk]:
        raise OSError("the store is gone")


def test_docsearch_leaves_out_an_index_that_fails_and_searches_the_others(tmp_path: Path) -> None:
    result = DocSearchTool([_BrokenRetriever(), _retriever(tmp_path)], top_k=2).invoke("reactor")
    assert result.ok, result.as_observation()
    assert result.content.splitlines()[0] == "(reactor.md) The Zorblax reactor runs at 451 kelvin."


def test_docsearch_told_to_stop_searches_no_further_and_numbers_nothing(tmp_path: Path) -> None:
    ledger = EvidenceLedger()
    flag = threading.Event()
    flag.set()
    with cancellable(flag):
        result = DocSearchTool([_retriever(tmp_path)], top_k=2, ledger=ledger).invoke("reactor")
    assert result.error is not None and result.error.code == "tool_failed"
    assert "cancelled" in result.error.message
    assert len(ledger) == 0


class SlowRetriever:
    """A retriever that takes its time, and counts its calls."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0

    def __call__(self, query: str, top_k: int) -> list[RetrievedChunk]:
        self.calls += 1
        time.sleep(self.delay)
        return [RetrievedChunk(Chunk(f"r{self.calls}", "found", "s", "a.md"), 1.0)]


def test_a_cancelled_docsearch_stops_before_its_next_retriever_and_numbers_nothing() -> None:
    first, second = SlowRetriever(0.4), SlowRetriever(0.0)
    ledger = EvidenceLedger()
    tool = DocSearchTool([first, second], ledger=ledger)  # type: ignore[list-item]
    call = ToolRunner(timeout=0.1, retries=0, cancel_grace=1.0).call(tool, "found")
    assert call.result.error is not None and call.result.error.retryable
    assert (first.calls, second.calls) == (1, 0)
    assert len(ledger) == 0


STREAM_CLOSED = threading.Event()


class TricklingLLM(ChatLLM):
    """Streams one word every 50 ms, forever; sets STREAM_CLOSED when its stream is closed."""

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        try:
            while True:
                time.sleep(0.05)
                yield LLMStreamItem("word ")
        finally:
            STREAM_CLOSED.set()


def test_a_cancelled_llm_call_closes_its_stream() -> None:
    STREAM_CLOSED.clear()
    call = ToolRunner(timeout=0.2, retries=0).call(LLMTool(TricklingLLM()), "Go on")
    assert call.result.error is not None and call.result.error.code == "timeout"
    assert STREAM_CLOSED.wait(1), "the generation went on after the call was cancelled"
