"""ragloom_app.testing: the built-ins pass their own contracts, and breaches are named."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import docx
import pytest
from pydantic import BaseModel

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.tools import (
    CalculatorTool,
    DocSearchTool,
    LLMTool,
    ToolContext,
    ToolResult,
)
from ragloom.events import (
    AnswerDelta,
    Citation,
    CitationsFound,
    Event,
    PlanCreated,
    PlanItem,
    StepStarted,
)
from ragloom.loaders import TextReader, default_readers
from ragloom.schema import Page
from ragloom_app.index.file import FileIndex
from ragloom_app.plugins import hookimpl
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo
from ragloom_app.reasoning.decompose import DecomposeReasoning
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.reasoning.react import ReActReasoning
from ragloom_app.reasoning.rewoo import ReWOOReasoning
from ragloom_app.testing import (
    SAMPLE_PASSAGES,
    ReplayLLM,
    StaticRetriever,
    check_index_type,
    check_plugin,
    check_reader,
    check_reasoning,
    check_settings_schema,
    check_tool,
)
from tests.helpers.pdfs import make_pdf

SAMPLES: dict[str, bytes] = {
    ".txt": b"The reactor runs hot.\n",
    ".md": b"# Reactor\n\nThe reactor runs hot.\n",
    ".markdown": b"The reactor runs hot.\n",
    ".html": b"<html><body><p>The reactor runs hot.</p></body></html>",
    ".htm": b"<p>The reactor runs hot.</p>",
    ".csv": b"part,temperature\nreactor,hot\n",
    ".json": b'{"reactor": "runs hot"}',
    ".pdf": make_pdf(["The reactor runs hot."]),
}


@pytest.mark.parametrize("extension", sorted(default_readers()))
def test_every_builtin_reader_meets_the_reader_contract(extension: str, tmp_path: Path) -> None:
    sample = tmp_path / f"sample{extension}"
    if extension == ".docx":
        document = docx.Document()
        document.add_paragraph("The reactor runs hot.")
        document.save(str(sample))
    else:
        sample.write_bytes(SAMPLES[extension])
    check_reader(default_readers()[extension], sample, expect="reactor")


@pytest.mark.parametrize(
    "mode", [FullQAReasoning, DecomposeReasoning, ReActReasoning, ReWOOReasoning]
)
def test_every_builtin_mode_meets_the_reasoning_contract(mode: type[BaseReasoning]) -> None:
    record = check_reasoning(mode)
    assert record["answer"] and record["mode"] == mode.get_info().id


def test_fullqa_cites_the_sample_passages() -> None:
    record = check_reasoning(FullQAReasoning, llm=ReplayLLM(replies=["451 kelvin [1]."]))
    assert [c["text"] for c in record["citations"]] == [SAMPLE_PASSAGES[0]]


def test_the_builtin_tools_meet_the_tool_contract() -> None:
    llm = ReplayLLM(replies=["Hello."])
    context = ToolContext(
        llm=llm, retrievers=[StaticRetriever(passages=SAMPLE_PASSAGES)], ledger=EvidenceLedger()
    )
    check_tool(CalculatorTool, "451 - 273", expect="178", bad_input="451 -")
    check_tool(DocSearchTool, "reactor kelvin", context=context, expect="451 kelvin")
    check_tool(LLMTool, "Say hello", context=context, expect="Hello.")


def test_the_file_index_meets_the_index_contract(tmp_path: Path) -> None:
    sample = tmp_path / "zorblax_reactor.md"
    sample.write_text("The Zorblax reactor runs at 451 kelvin.\n")
    (hit, *_) = check_index_type(FileIndex, [sample])
    assert hit.chunk.source_name == "zorblax_reactor.md"


class _BadSearchSettings(FileIndex):
    """Declares a search setting whose default is not among its choices."""

    @classmethod
    def get_user_settings(cls) -> dict[str, dict[str, Any]]:
        return {"how": {"name": "How", "value": "x", "component": "dropdown", "choices": ["a"]}}


class _FailsOnVector(FileIndex):
    """Offers a retrieval mode it cannot search with."""

    def get_retriever_pipelines(self, settings: Any, selected: Any = None) -> list[Any]:
        if settings["retrieval_mode"] == "vector":
            raise RuntimeError("no vectors here")
        return super().get_retriever_pipelines(settings, selected)


class _TakesAnything(FileIndex):
    """Lets any key through: a typo would pass silently."""

    @classmethod
    def resolve_settings(cls, given: Any = None) -> dict[str, Any]:
        return {**super().resolve_settings({}), **(given or {})}


class _DeniesEverything(FileIndex):
    """Says no term occurs: every question would be declined."""

    def find_terms(self, terms: Any, selected: Any = None) -> dict[str, bool | None]:
        return dict.fromkeys(terms, False)


class _AnswersPartly(FileIndex):
    """Leaves terms it was asked about unanswered."""

    def find_terms(self, terms: Any, selected: Any = None) -> dict[str, bool | None]:
        return {}


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (_DeniesEverything, r"find_terms\(\) says \['The', 'Zorblax', 'reactor'\] occur nowhere"),
        (_AnswersPartly, r"find_terms\(\) must answer each term asked"),
        (_BadSearchSettings, r"get_user_settings\(\)\['how'\]: the default 'x' is not among"),
        (_FailsOnVector, r"with the settings \{'retrieval_mode': 'vector'\} raised"),
        (_TakesAnything, r"must refuse an unknown key"),
    ],
)
def test_an_index_types_search_settings_are_checked(
    tmp_path: Path, cls: type[FileIndex], message: str
) -> None:
    sample = tmp_path / "zorblax_reactor.md"
    sample.write_text("The Zorblax reactor runs at 451 kelvin.\n")
    with pytest.raises(AssertionError, match=message):
        check_index_type(cls, [sample])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"value": 1, "component": "number"}, "needs a 'name'"),
        ({"name": "K", "component": "number"}, "needs a 'value'"),
        ({"name": "K", "value": 1, "component": "slider"}, "'component' must be one of"),
        ({"name": "K", "value": 30, "component": "number", "maximum": 20}, "outside"),
        ({"name": "K", "value": "x", "component": "dropdown", "choices": ["a"]}, "not among"),
        ({"name": "K", "value": 1, "component": "checkbox"}, "True or False"),
    ],
)
def test_a_bad_setting_is_named(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(AssertionError, match=rf"Mode\['k'\]: .*{message}"):
        check_settings_schema({"k": spec}, "Mode")


class Chatty(BaseReasoning):
    """Breaks the event contract: a bare string, a step never finished."""

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo("chatty", "Chatty", "Says things.")

    @classmethod
    def get_pipeline(cls, settings: Any, state: Any, retrievers: Any) -> Chatty:
        return cls()

    def stream(self, question: str) -> Iterator[Event]:
        yield StepStarted("think")
        yield AnswerDelta("Hello")
        yield "and a bare string"  # type: ignore[misc]


def test_a_reasoning_that_streams_a_non_event_fails_the_contract() -> None:
    with pytest.raises(AssertionError, match=r"event 2 \(str\): a str is not one of ragloom"):
        check_reasoning(Chatty)


class Unwritten(Chatty):
    def stream(self, question: str) -> Iterator[Event]:
        yield AnswerDelta(None)  # type: ignore[arg-type]


def test_a_reasoning_that_streams_an_event_of_the_wrong_shape_fails_saying_which_field() -> None:
    with pytest.raises(AssertionError, match=r"event 0 \(AnswerDelta\): AnswerDelta.text must be"):
        check_reasoning(Unwritten)


def _planning(plan: list[PlanItem]) -> type[BaseReasoning]:
    """A mode that plans ``plan``, then answers citing the first sample passage."""

    class Planning(Chatty):
        def stream(self, question: str) -> Iterator[Event]:
            yield PlanCreated(list(plan), raw="")
            yield AnswerDelta("It runs at 451 kelvin [1].")
            yield CitationsFound([Citation(1, "sample.md", None, SAMPLE_PASSAGES[0], "c1")])

    return Planning


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ([PlanItem("")], "must be a PlanItem with an id"),
        ([PlanItem("S1"), PlanItem("S1")], "two steps 'S1'"),
        ([PlanItem("S1", depends_on=("S0",))], "'S1' depends on S0, not in the plan"),
        ([PlanItem("S1", status="dropped")], "step 'S1' is dropped without a reason"),
    ],
)
def test_a_plan_the_ui_cannot_draw_fails_the_contract(plan: list[PlanItem], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_reasoning(_planning(plan))


def test_a_plan_of_typed_steps_passes_and_prints_as_json() -> None:
    plan = [PlanItem("S1", "Look it up"), PlanItem("S2", "Check", depends_on=("S1",))]
    record = check_reasoning(_planning(plan))
    assert [item["depends_on"] for item in record["steps"][0]["plan"]] == [[], ["S1"]]


class Crashing(CalculatorTool):
    def invoke(self, raw: str | dict[str, Any]) -> ToolResult:
        if raw == "":
            raise ValueError("empty")
        return super().invoke(raw)


def test_a_tool_that_raises_fails_the_contract() -> None:
    with pytest.raises(AssertionError, match=r"invoke\(''\) raised ValueError"):
        check_tool(Crashing, "1 + 1")


class ShoutingName(CalculatorTool):
    name = "Calc"


def test_a_tool_whose_name_agents_cannot_write_fails_the_contract() -> None:
    with pytest.raises(AssertionError, match="name must be a lower-case identifier"):
        check_tool(ShoutingName, "1 + 1")


class Picky(CalculatorTool):
    """Its check refuses inputs it computes."""

    @classmethod
    def check_input(cls, text: str) -> str | None:
        return "no spaces, please" if " " in text else None


class CheckerRaises(CalculatorTool):
    @classmethod
    def check_input(cls, text: str) -> str | None:
        raise KeyError(text)


def test_a_tool_whose_input_check_refuses_its_working_sample_fails_the_contract() -> None:
    with pytest.raises(AssertionError, match="check_input\\(\\) refuses the sample input"):
        check_tool(Picky, "1 + 1")
    with pytest.raises(AssertionError, match="check_input\\(\\) raised KeyError"):
        check_tool(CheckerRaises, "1 + 1")


class Locked(CalculatorTool):
    """Holds a lock, which cannot be pickled: it cannot be sent to the tool sandbox."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


class NeedsTheRequest(CalculatorTool):
    """Builds itself from the request, yet keeps the default ``sandboxed = True``."""

    @classmethod
    def from_context(cls, context: ToolContext) -> NeedsTheRequest:
        return cls()


def test_a_sandboxed_tool_that_cannot_reach_its_worker_fails_the_contract() -> None:
    with pytest.raises(AssertionError, match=r"failed in the tool sandbox: .*cannot be sent"):
        check_tool(Locked, "1 + 1")
    with pytest.raises(AssertionError, match=r"overrides from_context\(\).*sandboxed = False"):
        check_tool(NeedsTheRequest, "1 + 1")


class Strict(TextReader):
    def read(self, path: Path) -> list[Page]:
        if not path.exists() or not path.stat().st_size:
            raise ValueError("no")
        return super().read(path)


def test_a_reader_that_raises_a_plain_error_fails_the_contract(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("text")
    with pytest.raises(AssertionError, match="an empty file raised ValueError: no; raise a"):
        check_reader(Strict(), tmp_path / "a.txt")


def test_a_reader_that_cannot_run_in_the_readers_sandbox_fails_the_contract(
    tmp_path: Path,
) -> None:
    class Local(TextReader):  # defined in a function: it cannot be pickled to a worker
        pass

    (tmp_path / "a.txt").write_text("text")
    with pytest.raises(
        AssertionError, match="Local: cannot run in the readers sandbox: the reader"
    ):
        check_reader(Local(), tmp_path / "a.txt")


def test_check_plugin_names_a_misspelt_hook_and_a_bad_return() -> None:
    class Typo:
        @hookimpl
        def ragloom_tool(self) -> list[type]:
            return []

    with pytest.raises(AssertionError, match="unknown hook ragloom_tool"):
        check_plugin(Typo())

    class Wrong:
        name: ClassVar[str] = "wrong"

        @hookimpl
        def ragloom_tools(self) -> list[Any]:
            return [BaseModel]

    with pytest.raises(AssertionError, match="not a BaseTool subclass"):
        check_plugin(Wrong())


def test_check_plugin_calls_the_command_hooks_too() -> None:
    """The ``ragloom`` command's hooks, which no app start calls, are checked as well."""

    class Raising:
        @hookimpl
        def ragloom_commands(self) -> list[Any]:
            raise RuntimeError("boom")

    with pytest.raises(AssertionError, match="boom"):
        check_plugin(Raising())

    class WrongKind:
        @hookimpl
        def ragloom_commands(self) -> Any:
            return {"not a click command"}

    with pytest.raises(AssertionError, match="must return a list of click commands"):
        check_plugin(WrongKind())


def test_check_plugin_refuses_a_tool_name_the_app_would_refuse() -> None:
    plugin = type("P", (), {"ragloom_tools": staticmethod(hookimpl(lambda: [ShoutingName]))})
    with pytest.raises(AssertionError, match=r"ShoutingName\.name must be a lower-case identifier"):
        check_plugin(plugin)


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ({"k": {"name": "K", "value": 1, "component": "number", "minimum": "0"}}, "'minimum'"),
        ({f"k{n}": {"name": "K", "value": "", "component": "text"} for n in range(101)}, "101"),
        ({"k" * 65: {"name": "K", "value": "", "component": "text"}}, "at most 64 characters"),
        (
            {"k": {"name": "K", "value": 0, "component": "radio", "choices": list(range(501))}},
            "501 choices; at most 500",
        ),
    ],
)
def test_settings_past_a_bound_fail_the_contract(specs: dict[str, Any], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_settings_schema(specs, "Mode")


def test_check_plugin_refuses_an_index_type_whose_settings_raise() -> None:
    class Fragile(FileIndex):
        @classmethod
        def get_user_settings(cls) -> dict[str, Any]:
            raise KeyError("mode")

    plugin = type("P", (), {"ragloom_index_types": staticmethod(hookimpl(lambda: [Fragile]))})
    with pytest.raises(AssertionError, match=r"Fragile.get_user_settings\(\) raised KeyError"):
        check_plugin(plugin)


class NumberedMode(FullQAReasoning):
    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(id=5, name="Five", description="An id of the wrong type.")  # type: ignore[arg-type]


def test_check_plugin_and_check_reasoning_refuse_a_mode_id_the_app_refuses() -> None:
    plugin = type("P", (), {"ragloom_reasonings": staticmethod(hookimpl(lambda: [NumberedMode]))})
    with pytest.raises(AssertionError, match="NumberedMode: the id 5 must be 1 to 40 lower-case"):
        check_plugin(plugin)  # passed before: the app only asked for a non-empty id
    with pytest.raises(AssertionError, match="NumberedMode: the id 5 must be"):
        check_reasoning(NumberedMode)
