"""The tool registry builds fresh tools per request; the ledger numbers evidence once."""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest
from pydantic import BaseModel

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.tools import (
    BaseTool,
    CalculatorTool,
    DocSearchTool,
    ToolContext,
    ToolRegistry,
    ToolResult,
)
from ragloom.agents.tools.runner import ToolRunner, call_record
from ragloom.schema import Chunk, RetrievedChunk
from tests.helpers.scripted_llm import ScriptedLLM


class EchoTool(BaseTool):
    class Arguments(BaseModel):
        text: str

    name: ClassVar[str] = "echo"
    description: ClassVar[str] = "Repeats its input."

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, EchoTool.Arguments)
        return ToolResult(content=arguments.text)


class OtherCalculator(CalculatorTool):
    """A plugin's calculator, registered under the built-in's name."""


def test_builtins_are_registered_and_each_request_gets_new_tools() -> None:
    registry = ToolRegistry()
    assert registry.names() == ["docsearch", "calculator", "llm"]
    first = registry.build(ToolContext(llm=ScriptedLLM(), ledger=EvidenceLedger()))
    second = registry.build(ToolContext(llm=ScriptedLLM(), ledger=EvidenceLedger()))
    assert isinstance(first["docsearch"], DocSearchTool)
    assert first["docsearch"] is not second["docsearch"]
    assert first["docsearch"].ledger is not second["docsearch"].ledger


def test_a_plugin_tool_is_added_and_a_taken_name_is_replaced_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    registry.register(EchoTool)
    assert (
        registry.build(ToolContext(llm=ScriptedLLM()), ["echo"])["echo"].invoke("hi").content
        == "hi"
    )

    with caplog.at_level(logging.WARNING):
        registry.register(OtherCalculator)
    assert registry.get("calculator") is OtherCalculator
    assert "registered twice" in caplog.text
    with pytest.raises(KeyError, match="available: docsearch"):
        registry.build(ToolContext(llm=ScriptedLLM()), ["teleport"])
    with pytest.raises(TypeError):
        registry.register(object)  # type: ignore[arg-type]


class NeedsTheRequest(EchoTool):
    @classmethod
    def from_context(cls, context: ToolContext) -> NeedsTheRequest:
        return cls()


class NeedsTheRequestInProcess(NeedsTheRequest):
    sandboxed = False


class NegativeTimeout(EchoTool):
    timeout = -1.0


def test_an_input_nested_past_pythons_stack_is_text_for_the_tool() -> None:
    """A model repeating "[": read as the tool's one field, as any text that is not a
    JSON object is, not a RecursionError out of the parser."""
    echo = ToolRegistry()
    echo.register(EchoTool)
    nested = "[" * 3000 + "]" * 3000
    assert (
        echo.build(ToolContext(llm=ScriptedLLM()), ["echo"])["echo"].invoke(nested).content
        == nested
    )


class NowTool(BaseTool):
    """A tool that takes no arguments."""

    class Arguments(BaseModel):
        pass

    name: ClassVar[str] = "now"
    description: ClassVar[str] = "The time."
    sandboxed = False

    def run(self, arguments: BaseModel) -> ToolResult:
        return ToolResult(content="noon")


@pytest.mark.parametrize("raw", ["now", "[1]", '"x"', "[]"])
def test_a_tool_without_arguments_given_anything_but_an_object_fails_as_invalid(
    raw: str,
) -> None:
    result = NowTool().invoke(raw)
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.message == "now expects a JSON object with []"
    assert NowTool().invoke("{}").content == "noon"


def test_the_registry_refuses_a_tool_that_cannot_run_as_it_says() -> None:
    registry = ToolRegistry()
    with pytest.raises(TypeError, match=r"overrides from_context\(\).*`sandboxed = False`"):
        registry.register(NeedsTheRequest)
    registry.register(NeedsTheRequestInProcess)  # in a thread, it may use the request

    class Local(EchoTool):
        pass

    with pytest.raises(TypeError, match="defined inside a function"):
        registry.register(Local)
    with pytest.raises(TypeError, match="timeout must be None or a positive number"):
        registry.register(NegativeTimeout)
    # The parsers read a tool's name in lower case: this one could never be called.
    with pytest.raises(ValueError, match="must be a lower-case identifier, not 'WebSearch'"):
        registry.register(type("WebSearch", (EchoTool,), {"name": "WebSearch"}))
    assert registry.names() == ["docsearch", "calculator", "llm", "echo"]


class NeedsAKey(EchoTool):
    """A plugin tool that cannot be set up without its configuration."""

    name: ClassVar[str] = "websearch"
    sandboxed = False

    @classmethod
    def from_context(cls, context: ToolContext) -> NeedsAKey:
        raise RuntimeError("WEBSEARCH_KEY is not set")


def test_a_tool_that_cannot_be_set_up_is_left_out_of_the_request_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    registry.register(NeedsAKey)
    with caplog.at_level(logging.WARNING):
        tools = registry.build(ToolContext(llm=ScriptedLLM(), ledger=EvidenceLedger()))
    assert list(tools) == ["docsearch", "calculator", "llm"]
    assert tools["calculator"].invoke("2 + 2").content == "4"
    assert "'websearch'" in caplog.text and "left out" in caplog.text
    assert "WEBSEARCH_KEY is not set" in caplog.text  # the cause, for the admin


def _hit(chunk_id: str) -> RetrievedChunk:
    return RetrievedChunk(Chunk(chunk_id, f"text of {chunk_id}", "s", "doc.md"), 1.0)


def test_the_ledger_numbers_each_chunk_once_and_keeps_numbers_when_trimming() -> None:
    ledger = EvidenceLedger()
    assert ledger.add([_hit("a"), _hit("b")]) == [1, 2]
    assert ledger.add([_hit("b"), _hit("c")]) == [2, 3]
    block = ledger.block(lambda text: len(text.split()), max_tokens=10, numbers=[3, 1])
    assert block.text == "[1] (doc.md) text of a\n[3] (doc.md) text of c\n"
    assert [item.chunk.id for item in block.items] == ["a", "b", "c"]


def test_the_runner_retries_retryable_errors_with_exponential_backoff() -> None:
    class Flaky(EchoTool):
        sandboxed = False  # its failures are counted in this process
        failures = 2

        def run(self, arguments: BaseModel) -> ToolResult:
            if Flaky.failures:
                Flaky.failures -= 1
                return ToolResult.failure("busy", "try later", retryable=True)
            return super().run(arguments)

    waits: list[float] = []
    call = ToolRunner(retries=2, backoff=0.1, sleep=waits.append).call(Flaky(), "hi")
    assert call.result.content == "hi" and call.attempts == 3
    assert waits == [0.1, 0.2]
    gave_up = ToolRunner(retries=0, sleep=waits.append).call(Flaky(), "x")
    assert gave_up.result.ok  # failures were used up above
    Flaky.failures = 5
    last = ToolRunner(retries=1, backoff=0, sleep=waits.append).call(Flaky(), "x")
    assert last.result.error is not None and last.attempts == 2


def test_a_call_record_shows_the_output_or_the_error_as_ask_json_does() -> None:
    call = ToolRunner().call(EchoTool(), "hi")
    assert call_record("hi", call.result, call.attempts) == {
        "input": "hi",
        "attempts": 1,
        "output": "hi",
    }
    failed = ToolResult.failure("busy", "try later", retryable=True)
    assert call_record("x", failed, 3)["error"] == {
        "code": "busy",
        "message": "try later",
        "retryable": True,
    }
    assert len(call_record("x", ToolResult("a" * 5000), 1)["output"]) == 2000
    # An input refused as too long is shown, not carried whole into the events.
    refused = call_record("#E1 " * 80_000, ToolResult.failure("input_too_long", "x"), 1)
    assert len(refused["input"]) == 2000
    assert refused["input"].endswith(
        "[… cut: the input had 320,000 characters, the limit is 2,000]"
    )


def test_the_ledger_shows_the_union_of_the_sentences_each_search_kept() -> None:
    ledger = EvidenceLedger()
    hit = RetrievedChunk(Chunk("a", "One. Two. Three.", "s", "doc.md"), 1.0)
    assert ledger.add([hit], [((0, 4),)]) == [1]
    assert ledger.block().text == "[1] (doc.md) One. …\n"
    ledger.add([hit], [((10, 16),)])  # another search kept another sentence
    assert ledger.block().text == "[1] (doc.md) One. … Three.\n"
    ledger.add([hit])  # numbering it again (the ReWOO solver does) changes nothing
    assert ledger.block().text == "[1] (doc.md) One. … Three.\n"
    ledger.add([hit], [None])  # a search without focus showed all of it
    assert ledger.block().text == "[1] (doc.md) One. Two. Three.\n"
    assert ledger.items[0].chunk.text == "One. Two. Three."  # citations keep the chunk
