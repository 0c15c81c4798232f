"""The ReWOO agent end to end with a scripted LLM: plan, repair, work, solve, cite."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo import (
    ReWOOAgent,
    ReWOOPlanner,
    ReWOOSolver,
    plan_grammar,
    plan_schema,
)
from ragloom.agents.tools import BaseTool, ToolContext, ToolRegistry, ToolResult
from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.events import (
    AnswerCollector,
    CitationsFound,
    LLMCallFinished,
    PlanCreated,
    StepFinished,
)
from ragloom.retrieval import FullTextRetriever, SentenceFocus
from ragloom.schema import Chunk
from ragloom.stores import BM25Store
from tests.helpers.rewoo_agent import reactor_retriever
from tests.helpers.rewoo_agent import rewoo_agent as _agent
from tests.helpers.scripted_llm import ScriptedLLM

PLAN = """#Plan1: Find the reactor's temperature.
#E1 = docsearch[reactor temperature]
#Plan2: Convert it to Celsius.
#E2 = calculator[451 - 273.15]
"""


@pytest.fixture
def retriever(tmp_path: Path) -> FullTextRetriever:
    return reactor_retriever(tmp_path)


def test_plans_runs_and_answers_citing_the_documents_found(retriever: FullTextRetriever) -> None:
    llm = ScriptedLLM(replies=[PLAN, "The reactor runs at 451 kelvin, 177.85 °C [1]."])
    events = _agent(llm, retriever).run("How hot is the reactor in Celsius?")
    record = AnswerCollector("rewoo").extend(events).to_dict(0.0)

    plan = next(e for e in events if isinstance(e, PlanCreated))
    assert [s.tool for s in plan.steps] == ["docsearch", "calculator"] and not plan.repaired
    assert record["answer"] == "The reactor runs at 451 kelvin, 177.85 °C [1]."
    assert [c["chunk_id"] for c in record["citations"]] == ["a-0"]
    calculator = next(s for s in record["steps"] if s["step"] == "E2:calculator" and "output" in s)
    assert calculator["output"]["output"] == "177.85"
    assert record["usage"]["llm_calls"] == 2
    # The solver saw the document as source [1] and the calculator's result after its step.
    solver_prompt = llm.prompts[1][-1].content
    assert "[1] (reactor.md) The Zorblax reactor runs at 451 kelvin." in solver_prompt
    assert "#E2 (Convert it to Celsius.) = calculator[451 - 273.15] -> 177.85" in solver_prompt


def test_an_invalid_plan_gets_one_repair_with_the_problems_shown(
    retriever: FullTextRetriever,
) -> None:
    cyclic = "#E1 = docsearch[#E2]\n#E2 = docsearch[#E1]"
    llm = ScriptedLLM(replies=[cyclic, PLAN, "It is 177.85 °C [1]."])
    events = _agent(llm, retriever).run("How hot is the reactor in Celsius?")
    assert next(e for e in events if isinstance(e, PlanCreated)).repaired
    repair_request = llm.prompts[1][-1].content
    assert "cycle" in repair_request and "#E1 -> #E2 -> #E1" in repair_request
    assert llm.prompts[1][-2].content == cyclic  # the failed plan, as the model's turn
    purposes = [e.purpose for e in events if isinstance(e, LLMCallFinished)]
    assert purposes == ["plan", "plan-repair", "solve"]


def test_a_plan_cut_short_gets_the_repair_call(retriever: FullTextRetriever) -> None:
    cut = "#Plan1: Find it.\n#E1 = docsearch[reactor temperature]\n#E2 = calculator[451 - 27"
    llm = ScriptedLLM(replies=[cut, PLAN, "It is 177.85 °C [1]."])
    events = _agent(llm, retriever).run("How hot is the reactor in Celsius?")
    assert next(e for e in events if isinstance(e, PlanCreated)).repaired
    assert "a step could not be read: #E2 = calculator[451 - 27" in llm.prompts[1][-1].content
    purposes = [e.purpose for e in events if isinstance(e, LLMCallFinished)]
    assert purposes == ["plan", "plan-repair", "solve"]


def test_a_plan_cut_short_again_by_its_repair_runs_the_steps_it_could_read(
    retriever: FullTextRetriever,
) -> None:
    cut = "#Plan1: Find it.\n#E1 = docsearch[reactor temperature]\n#E2 = calculator[451 - 27"
    llm = ScriptedLLM(replies=[cut, cut, "It runs at 451 kelvin [1]."])
    events = _agent(llm, retriever).run("How hot is the reactor?")
    plan = next(e for e in events if isinstance(e, PlanCreated))
    assert plan.repaired and [s.tool for s in plan.steps] == ["docsearch"]
    record = AnswerCollector("rewoo").extend(events).to_dict(0.0)
    assert record["answer"].startswith("It runs at 451 kelvin")


def test_a_plan_still_invalid_after_repair_is_reported_with_the_raw_plan(
    retriever: FullTextRetriever,
) -> None:
    llm = ScriptedLLM(replies=["I would search.", "#E1 = teleport[the reactor]"])
    record = AnswerCollector("rewoo").extend(_agent(llm, retriever).run("Q?")).to_dict(0.0)
    assert "could not make a plan that runs" in record["answer"]
    assert "unknown tool 'teleport'" in record["answer"]
    assert "#E1 = teleport[the reactor]" in record["answer"]
    plan_step = next(s for s in record["steps"] if s["step"] == "plan" and s["event"] == "finished")
    assert "teleport" in plan_step["error"]
    assert record["citations"] == []


class _Hanging(BaseTool):
    class Arguments(BaseModel):
        what: str

    name: ClassVar[str] = "hang"
    description: ClassVar[str] = "Never answers."

    def run(self, arguments: BaseModel) -> ToolResult:
        time.sleep(60)  # in its sandbox worker, which is killed at the timeout
        return ToolResult(content="too late")


class _Broken(BaseTool):
    class Arguments(BaseModel):
        what: str

    name: ClassVar[str] = "broken"
    description: ClassVar[str] = "Raises."

    def run(self, arguments: BaseModel) -> ToolResult:
        raise RuntimeError("disk on fire")


def test_the_solver_shows_a_step_as_planned_not_with_earlier_evidence_pasted_in(
    retriever: FullTextRetriever,
) -> None:
    plan = "#E1 = docsearch[reactor]\n#Plan2: Ask about it.\n#E2 = llm[Is #E1 hot?]\n"
    llm = ScriptedLLM(replies=[plan, "Yes, quite hot.", "It runs at 451 kelvin [1]."])
    _agent(llm, retriever).run("Is the reactor hot?")
    # The llm tool got the passage in place of #E1; the solver sees the passage once, as [1].
    assert "The Zorblax reactor runs at 451 kelvin." in llm.prompts[1][-1].content
    solver_prompt = llm.prompts[2][-1].content
    assert "#E2 (Ask about it.) = llm[Is #E1 hot?] -> Yes, quite hot." in solver_prompt
    assert solver_prompt.count("runs at 451 kelvin") == 1


def test_with_a_sentence_focus_the_solver_sees_the_sentences_docsearch_kept(
    tmp_path: Path,
) -> None:
    store = BM25Store(tmp_path / "bm25")
    plant = "The plant opened in 1990. The Zorblax reactor runs at 451 kelvin. Soup on Fridays."
    store.add([Chunk("p-0", plant, "p", "plant.md")])
    focus = SentenceFocus(embeddings=SentenceTransformerEmbeddings(), sentences=1, neighbours=0)
    llm = ScriptedLLM(replies=["#E1 = docsearch[reactor temperature]\n", "451 kelvin [1]."])
    ledger = EvidenceLedger()
    context = ToolContext(llm=llm, retrievers=[FullTextRetriever(store=store)], ledger=ledger)
    tools = ToolRegistry().build(dataclasses.replace(context, focus=focus))
    planner = ReWOOPlanner(llm=llm, tools=[type(tool) for tool in tools.values()])
    agent = ReWOOAgent(planner=planner, solver=ReWOOSolver(llm=llm), tools=tools, ledger=ledger)
    record = AnswerCollector("rewoo").extend(agent.run("How hot is the reactor?")).to_dict(0.0)
    assert (
        "[1] (plant.md) … The Zorblax reactor runs at 451 kelvin. …" in llm.prompts[1][-1].content
    )
    assert [c["chunk_id"] for c in record["citations"]] == ["p-0"]  # the whole chunk is cited


def test_failed_and_hanging_steps_give_no_evidence_and_the_rest_still_runs(
    retriever: FullTextRetriever,
) -> None:
    plan = (
        "#E1 = docsearch[reactor]\n#E2 = hang[x]\n#E3 = broken[y]\n"
        "#E4 = llm[Summarise #E1 and #E2]\n"
    )
    llm = ScriptedLLM(replies=[plan, "It runs at 451 kelvin [1]."])
    agent = _agent(llm, retriever, hang=_Hanging, broken=_Broken)
    agent.tool_retries = 0
    started = time.perf_counter()
    events = agent.run("How hot is the reactor?")
    # The hanging call (60 s) was stopped at its 2 s timeout; the bound leaves room for a
    # busy machine (a 4 s bound failed at 4.1 s with benchmarks beside the suite).
    assert time.perf_counter() - started < 30
    errors = {e.name: e.error for e in events if isinstance(e, StepFinished) and e.error}
    assert errors["E2:hang"].startswith("timeout:")
    assert errors["E3:broken"] == "tool_failed: RuntimeError: disk on fire"
    # The llm step would have read an error message for #E2: it is skipped, not called.
    assert errors["E4:llm"] == "skipped: it uses #E2, which failed"
    # The solver sees the passage and nothing of the steps that failed: as if never planned.
    solver_prompt = llm.prompts[1][-1].content
    assert "Error [" not in solver_prompt and "disk on fire" not in solver_prompt
    assert "#E2" not in solver_prompt and "#E3" not in solver_prompt and "#E4" not in solver_prompt
    assert "] (reactor.md)" in solver_prompt
    assert events[-1] == CitationsFound(events[-1].citations)
    assert [c.chunk_id for c in events[-1].citations] == ["a-0"]
    assert [e.purpose for e in events if isinstance(e, LLMCallFinished)] == ["plan", "solve"]


def test_the_planner_is_constrained_by_a_grammar_when_the_llm_takes_one(
    retriever: FullTextRetriever,
) -> None:
    llm = ScriptedLLM(replies=[PLAN, "177.85 °C [1]."], grammar=True)
    _agent(llm, retriever).run("How hot is the reactor in Celsius?")
    grammar = llm.options_seen[0].grammar
    assert grammar == plan_grammar(["docsearch", "calculator", "llm"], 4, first_tool="docsearch")
    # A document assistant's plan starts with a search of the documents.
    assert 'step1 ::= "#Plan1: " text "\\n#E1 = " "docsearch" "[" input1 "]\\n"' in grammar
    assert llm.options_seen[1].grammar is None  # the solver writes free text


def test_the_plan_grammar_numbers_steps_in_order_and_bounds_them() -> None:
    grammar = plan_grammar(["docsearch", "calculator"], max_steps=3)
    assert grammar.splitlines()[0] == "root ::= step1 (step2 (step3)?)?"
    assert 'step3 ::= "#Plan3: " text "\\n#E3 = " tool "[" input3 "]\\n"' in grammar
    # The first input may not refer to anything; later ones only to earlier steps.
    assert "input1 ::= [^\\]\\n# ] [^\\]\\n#]{0,160}" in grammar
    assert '"#E" [1-2]' in grammar.splitlines()[-1]
    assert 'tool ::= "docsearch" | "calculator"' in grammar
    with pytest.raises(ValueError):
        plan_grammar([], 3)


def test_an_endpoint_without_grammars_gets_a_json_schema_of_plans(
    retriever: FullTextRetriever,
) -> None:
    json_plan = (
        '{"steps": [{"plan": "Find the temperature.", "tool": "docsearch", "input": "reactor"},'
        ' {"plan": "Convert it.", "tool": "calculator", "input": "451 - 273.15"}]}'
    )
    llm = ScriptedLLM(replies=[json_plan, "177.85 °C [1]."], structured=True)
    events = _agent(llm, retriever).run("How hot is the reactor in Celsius?")
    schema = llm.options_seen[0].json_schema
    assert schema == plan_schema(["docsearch", "calculator", "llm"], 4)
    assert schema["properties"]["steps"]["maxItems"] == 4
    assert llm.options_seen[0].grammar is None
    assert '{"steps": [{"plan":' in llm.prompts[0][0].content  # the format is explained
    plan = next(e for e in events if isinstance(e, PlanCreated))
    assert [(s.tool, s.input) for s in plan.steps] == [
        ("docsearch", "reactor"),
        ("calculator", "451 - 273.15"),
    ]
    assert "#E2 (Convert it.) = calculator[451 - 273.15] -> 177.85" in llm.prompts[1][-1].content


def test_without_a_grammar_a_plan_that_does_not_search_first_is_repaired(
    retriever: FullTextRetriever,
) -> None:
    no_search = '{"steps": [{"plan": "Guess.", "tool": "llm", "input": "How hot is it?"}]}'
    search = '{"steps": [{"plan": "Find it.", "tool": "docsearch", "input": "reactor"}]}'
    llm = ScriptedLLM(replies=[no_search, search, "451 kelvin [1]."], structured=True)
    events = _agent(llm, retriever).run("How hot is the reactor?")
    assert "#E1 must use docsearch: search the documents first" in llm.prompts[1][-1].content
    plan = next(e for e in events if isinstance(e, PlanCreated))
    assert [s.tool for s in plan.steps] == ["docsearch"] and plan.repaired
    planner = _agent(ScriptedLLM(replies=[no_search], structured=True), retriever).planner
    planner.search_first = False
    assert planner.plan("How hot is it?").plan.steps[0].tool == "llm"


def test_a_plan_in_lines_is_still_read_when_the_endpoint_ignored_the_schema(
    retriever: FullTextRetriever,
) -> None:
    llm = ScriptedLLM(replies=[PLAN, "177.85 °C [1]."], structured=True)
    events = _agent(llm, retriever).run("How hot is the reactor in Celsius?")
    plan = next(e for e in events if isinstance(e, PlanCreated))
    assert [s.tool for s in plan.steps] == ["docsearch", "calculator"] and not plan.repaired


def test_the_plan_constraint_can_be_chosen_or_switched_off(retriever: FullTextRetriever) -> None:
    llm = ScriptedLLM(replies=[], grammar=True, structured=True)
    planner = _agent(llm, retriever).planner
    assert planner.constraint_used() == "grammar"
    planner.constraint = "json_schema"
    assert planner.options().json_schema is not None and planner.options().grammar is None
    planner.constraint = "none"
    assert planner.options().json_schema is None and planner.options().grammar is None
    planner.constraint = "regex"
    with pytest.raises(ValueError, match="unknown plan constraint 'regex'"):
        planner.options()


def test_the_solver_keeps_its_prompt_inside_the_context(retriever: FullTextRetriever) -> None:
    many = "\n".join(f"#E{n} = docsearch[reactor canteen {n}]" for n in range(1, 5))
    llm = ScriptedLLM(replies=[many, "It runs hot [1]."], window=400)
    agent = _agent(llm, retriever)
    agent.solver.max_answer_tokens = 100
    agent.run("How hot is the reactor?")
    solver_prompt = sum(llm.count_tokens(m.content) for m in llm.prompts[-1])
    assert solver_prompt + 100 <= 400
