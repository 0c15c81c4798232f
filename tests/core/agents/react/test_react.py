"""ReAct: the step parser's tolerance, and the agent's control flow with a scripted LLM."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.react import (
    ReActAction,
    ReActAgent,
    ReActFinish,
    ReActFormatError,
    parse_react_step,
)
from ragloom.agents.tools import BaseTool, ToolContext, ToolRegistry, ToolResult
from ragloom.events import AnswerCollector
from ragloom.retrieval import FullTextRetriever
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.stores import BM25Store
from tests.helpers.scripted_llm import ScriptedLLM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Thought: search\nAction: docsearch\nAction Input: reactor heat\n",
            ReActAction("search", "docsearch", "reactor heat"),
        ),
        (
            "  thought:   search  \n  ACTION 1:  Docsearch \n action input 1 :  'reactor'  ",
            ReActAction("search", "docsearch", "reactor"),
        ),
        ("Action: docsearch[reactor heat]", ReActAction("", "docsearch", "reactor heat")),
        (
            'Action: The calculator, "Zorblax heat"\nAction Input: 2 + 2',
            ReActAction("", "calculator", "2 + 2"),
        ),
        (
            '```\nAction: calculator\nAction Input: {"expression": "2+2"}\n```',
            ReActAction("", "calculator", '{"expression": "2+2"}'),
        ),
        (
            'Action: `docsearch`\nAction Input: "reactor"\nObservation: it is hot',
            ReActAction("", "docsearch", "reactor"),
        ),
        (
            "Thought: I know it.\nFinal Answer: It runs at 451 kelvin [1].",
            ReActFinish("I know it.", "It runs at 451 kelvin [1]."),
        ),
        (
            # An action written before an imagined answer waits for the real observation.
            "Action: docsearch\nAction Input: reactor\nFinal Answer: 12",
            ReActAction("", "docsearch", "reactor"),
        ),
        (
            # "action:" in a thought's prose is not an action.
            "Thought: My next action: search the manual.\nAction: docsearch\nAction Input: x",
            ReActAction("My next action: search the manual.", "docsearch", "x"),
        ),
        (
            "Thought: No further action: I know it.\nFinal Answer: It runs at 451 kelvin [1].",
            ReActFinish("No further action: I know it.", "It runs at 451 kelvin [1]."),
        ),
        (
            # A sentence may start with it, on the thought's line.
            "Thought: I need the manual. Action: docsearch[max temperature]",
            ReActAction("I need the manual.", "docsearch", "max temperature"),
        ),
        (
            "I will search. Action: docsearch\nAction Input: max temperature",
            ReActAction("I will search.", "docsearch", "max temperature"),
        ),
        (
            # An open turn's step continues the "Thought:" line.
            "Thought: Action: calculator\nAction Input: 1 + 1",
            ReActAction("", "calculator", "1 + 1"),
        ),
        (
            "Thought: I'll take action:\nAction: docsearch\nAction Input: x",
            ReActAction("I'll take action:", "docsearch", "x"),
        ),
        # An action naming no tool finishes with the answer written after it.
        (
            "Thought: I know it.\nAction: None\nFinal Answer: It runs at 451 kelvin [1].",
            ReActFinish("I know it.", "It runs at 451 kelvin [1]."),
        ),
        (
            "Action: N/A\nAction Input: N/A\nFinal Answer: It runs at 451 kelvin [1].",
            ReActFinish("", "It runs at 451 kelvin [1]."),
        ),
        (
            # LangChain's form: the answer is the Action Input.
            "Thought: I know it.\nAction: Final Answer\nAction Input: It runs at 451 kelvin.",
            ReActFinish("I know it.", "It runs at 451 kelvin."),
        ),
        ("Action: final answer: 451 kelvin", ReActFinish("", "451 kelvin")),
    ],
)
def test_the_parser_reads_what_small_models_write(
    text: str, expected: ReActAction | ReActFinish
) -> None:
    assert parse_react_step(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Thought: hmm, let me think", "either 'Action:'"),
        ("Action: docsearch\n", "no 'Action Input:'"),
        ("Action: docsearch\nAction Input:   \n", "is empty"),
        ("Final Answer:   ", "Final Answer is empty"),
        ("Action: None\nAction Input: N/A", "names no tool: to answer, write 'Final Answer:'"),
    ],
)
def test_what_cannot_be_read_gets_an_error_the_model_can_act_on(text: str, message: str) -> None:
    with pytest.raises(ReActFormatError, match=message):
        parse_react_step(text)


def test_a_long_run_of_spaces_is_read_as_any_text() -> None:
    # A step a model padded with 16,000 spaces (the patterns once took a fifth of a second).
    spaces = " " * 16_000
    with pytest.raises(ReActFormatError, match="either 'Action:'"):
        parse_react_step(f"Thought: action{spaces}x")
    step = f"Thought{spaces}: x\nAction 1{spaces}: docsearch\nAction Input{spaces}: reactor"
    assert parse_react_step(step) == ReActAction("x", "docsearch", "reactor")


# A different action each time: an action repeated exactly ends the loop early.
ADD_AGAIN = " Action: calculator\nAction Input: 1 + 1 + 0"


def _agent(tmp_path: Path, llm: ScriptedLLM, **params: object) -> ReActAgent:
    # Most tests script the open-turn layout (each reply continues the scratchpad), which
    # the scripted LLM can do unless made with prefill=False.
    params.setdefault("open_turn", True)
    store = BM25Store(tmp_path / "bm25")
    store.add([Chunk("a-0", "The Zorblax reactor runs at 451 kelvin.", "a", "reactor.md")])
    ledger = EvidenceLedger()
    context = ToolContext(llm=llm, retrievers=[FullTextRetriever(store=store)], ledger=ledger)
    tools = ToolRegistry().build(context)
    return ReActAgent(llm=llm, tools=tools, ledger=ledger, **params)


def test_searches_first_continues_in_the_assistant_turn_and_cites(tmp_path: Path) -> None:
    llm = ScriptedLLM(
        replies=[" reactor temperature", " I know it.\nFinal Answer: It runs at 451 kelvin [1]."]
    )
    record = AnswerCollector("react").extend(_agent(tmp_path, llm).run("How hot?")).to_dict(0.0)
    assert record["answer"] == "It runs at 451 kelvin [1]."
    assert [c["chunk_id"] for c in record["citations"]] == ["a-0"]
    first, second = llm.prompts
    assert first[-1].role == "assistant" and first[-1].content.endswith("Action Input:")
    assert second[-1].content.endswith(
        "Action Input: reactor temperature\n"
        "Observation: [1] (reactor.md) The Zorblax reactor runs at 451 kelvin.\nThought:"
    )
    assert all(o.continue_assistant and "Observation:" in o.stop[-1] for o in llm.options_seen)
    search = next(s for s in record["steps"] if s["step"] == "step1:docsearch" and "output" in s)
    assert search["output"]["input"] == "reactor temperature"


def test_without_an_open_turn_steps_and_observations_take_turns(tmp_path: Path) -> None:
    # Servers that close a trailing assistant message (OpenAI, llama-cpp-python's).
    step = "Thought: more.\nAction: docsearch\nAction Input: Zorblax"
    llm = ScriptedLLM(
        replies=[step, "Thought: I know it.\nFinal Answer: It runs at 451 kelvin [1]."],
        prefill=False,
    )
    question = "How hot is the Zorblax reactor? "
    record = AnswerCollector("react").extend(_agent(tmp_path, llm).run(question)).to_dict(0.0)

    assert record["answer"] == "It runs at 451 kelvin [1]."
    assert [c["chunk_id"] for c in record["citations"]] == ["a-0"]
    # A new turn cannot be made to start with a search: the agent searches for the
    # question itself before the model is asked, and shows what it found with the question.
    first = next(s for s in record["steps"] if s["step"] == "step0:docsearch" and "output" in s)
    assert first["output"]["input"] == "How hot is the Zorblax reactor?"
    found = "Observation: [1] (reactor.md) The Zorblax reactor runs at 451 kelvin."
    assert [(m.role, m.content) for m in llm.prompts[1][1:]] == [
        (
            "user",
            "Question: How hot is the Zorblax reactor?\n\n"
            f"The documents were searched for the question.\n{found}",
        ),
        ("assistant", step),
        ("user", f"{found}\n\nContinue with Thought:"),
    ]
    assert llm.prompts[0][-1].content.endswith(f"{found}\n\nContinue with Thought:")
    assert not any(o.continue_assistant for o in llm.options_seen)


def test_steps_take_turns_by_default_even_where_a_turn_could_stay_open(tmp_path: Path) -> None:
    llm = ScriptedLLM(replies=["Thought: I know it.\nFinal Answer: It runs at 451 kelvin [1]."])
    agent = _agent(tmp_path, llm, open_turn=False)
    record = AnswerCollector("react").extend(agent.run("How hot is the Zorblax reactor?"))
    assert record.to_dict(0.0)["answer"] == "It runs at 451 kelvin [1]."
    assert llm.prompts[0][-1].role == "user"
    assert not llm.options_seen[0].continue_assistant


def test_without_an_open_turn_the_forced_answer_is_asked_for_in_a_turn(tmp_path: Path) -> None:
    llm = ScriptedLLM(
        replies=[
            "Thought: check.\nAction: calculator\nAction Input: 1 + 1",
            "Thought: check.\nAction: calculator\nAction Input: 2 * 2",
            "Thought: done.\nFinal Answer: It is 2.",
        ],
        prefill=False,
    )
    agent = _agent(tmp_path, llm, search_first=False, max_steps=2)
    record = AnswerCollector("react").extend(agent.run("What is 1 + 1?")).to_dict(0.0)

    assert record["answer"] == "I could not finish within 2 steps. From what I found: It is 2."
    assert llm.prompts[-1][-1].content == (
        "Observation: 4\n\n"
        "You have no steps left. Write Final Answer: and the answer from what you found."
    )


def test_a_forced_answer_in_a_turn_is_read_in_any_case(tmp_path: Path) -> None:
    # "Final answer:" is an answer, as the parser reads it: no call to write another.
    llm = ScriptedLLM(
        replies=[
            "Thought: check.\nAction: calculator\nAction Input: 1 + 1",
            "Thought: check.\nAction: calculator\nAction Input: 2 * 2",
            "Thought: done.\nFinal answer: It is 2.",
            "A FRESH ANSWER.",
        ],
        prefill=False,
    )
    agent = _agent(tmp_path, llm, search_first=False, max_steps=2)
    record = AnswerCollector("react").extend(agent.run("What is 1 + 1?")).to_dict(0.0)
    assert record["answer"] == "I could not finish within 2 steps. From what I found: It is 2."
    assert record["usage"]["llm_calls"] == 3


class WikiTool(BaseTool):
    """A plugin's search: its own text numbers its one passage [1]."""

    class Arguments(BaseModel):
        query: str

    name: ClassVar[str] = "wiki"
    description: ClassVar[str] = "Search the wiki."
    sandboxed: ClassVar[bool] = False

    def run(self, arguments: BaseModel) -> ToolResult:
        chunk = Chunk("w-0", "The Zorblax reactor was refitted in 1990.", "w", "wiki/Zorblax")
        return ToolResult(
            content="[1] (wiki/Zorblax) The Zorblax reactor was refitted in 1990.",
            sources=[RetrievedChunk(chunk, 1.0)],
        )


def test_a_plugin_tools_sources_are_numbered_for_the_request_and_can_be_cited(
    tmp_path: Path,
) -> None:
    llm = ScriptedLLM(
        replies=[
            "Thought: the wiki.\nAction: wiki\nAction Input: Zorblax reactor",
            "Thought: I know it.\nFinal Answer: It was refitted in 1990 [2].",
        ],
        prefill=False,
    )
    agent = _agent(tmp_path, llm)  # the search for the question finds reactor.md, [1]
    agent.tools["wiki"] = WikiTool()
    record = AnswerCollector("react").extend(agent.run("When was the Zorblax reactor refitted?"))
    result = record.record(0.0)
    assert result.answer == "It was refitted in 1990 [2]."
    assert [c.chunk_id for c in result.citations] == ["w-0"]
    assert result.grounding is not None and result.grounding.supported
    # The model saw the passage under its number for the request, not the tool's own [1].
    assert llm.prompts[1][-1].content == (
        "Observation: [2] (wiki/Zorblax) The Zorblax reactor was refitted in 1990.\n\n"
        "Continue with Thought:"
    )


def test_a_repeated_action_is_not_run_again_but_answered(tmp_path: Path) -> None:
    search = " Action: docsearch\nAction Input: Zorblax  REACTOR"
    llm = ScriptedLLM(replies=[" zorblax reactor", search, " It runs at 451 kelvin [1]."])
    record = AnswerCollector("react").extend(_agent(tmp_path, llm).run("How hot?")).to_dict(0.0)

    assert record["answer"] == "It runs at 451 kelvin [1]."  # not "could not finish"
    searches = [s for s in record["steps"] if s["step"].endswith(":docsearch") and "output" in s]
    assert len(searches) == 1
    final = next(s for s in record["steps"] if s["step"] == "final" and "input" in s)
    assert final["input"] == {"reason": "it repeated an action"}
    assert llm.prompts[2][-1].content.endswith(
        "The Zorblax reactor runs at 451 kelvin.\nThought: I must answer now with what I "
        "found.\nFinal Answer:"
    )


def test_unknown_tools_and_bad_format_become_observations(tmp_path: Path) -> None:
    llm = ScriptedLLM(
        replies=[
            " Action: teleport\nAction Input: reactor",
            " I am not sure what to do",
            " Final Answer: I do not know.",
        ]
    )
    agent = _agent(tmp_path, llm, search_first=False)
    record = AnswerCollector("react").extend(agent.run("How hot?")).to_dict(0.0)
    assert record["answer"] == "I do not know."
    second, third = llm.prompts[1][-1].content, llm.prompts[2][-1].content
    assert "there is no tool 'teleport'; available: docsearch, calculator, llm" in second
    assert "Observation: Invalid format: write either 'Action:'" in third


def test_after_max_steps_it_says_it_could_not_finish(tmp_path: Path) -> None:
    llm = ScriptedLLM(replies=[" Action: calculator\nAction Input: 1 + 1", ADD_AGAIN, " It is 2."])
    agent = _agent(tmp_path, llm, search_first=False, max_steps=2)
    record = AnswerCollector("react").extend(agent.run("What is 1 + 1?")).to_dict(0.0)
    assert record["answer"] == "I could not finish within 2 steps. From what I found: It is 2."
    assert llm.prompts[-1][-1].content.endswith(
        "I must answer now with what I found.\nFinal Answer:"
    )
    assert record["usage"]["llm_calls"] == 3


def test_a_forced_answer_without_words_is_written_from_the_passages_found(
    tmp_path: Path,
) -> None:
    search = " Action: docsearch\nAction Input: reactor"
    llm = ScriptedLLM(replies=[search, f"{search} heat", " ", "It runs at 451 kelvin [1]."])
    agent = _agent(tmp_path, llm, search_first=False, max_steps=2)
    record = AnswerCollector("react").extend(agent.run("How hot?")).to_dict(0.0)
    assert record["answer"] == (
        "I could not finish within 2 steps. From what I found: It runs at 451 kelvin [1]."
    )
    assert [c["chunk_id"] for c in record["citations"]] == ["a-0"]
    assert llm.prompts[-1][-1].content.startswith("Sources:\n[1] (reactor.md) The Zorblax")
    assert record["usage"]["llm_calls"] == 4


def test_a_forced_answer_without_words_and_nothing_found_says_so(tmp_path: Path) -> None:
    loop = " Action: calculator\nAction Input: 1 + 1"
    llm = ScriptedLLM(replies=[loop, ADD_AGAIN, " The plant opened in 1990 [2]."])  # the example
    agent = _agent(tmp_path, llm, search_first=False, max_steps=2)
    record = AnswerCollector("react").extend(agent.run("What is 1 + 1?")).to_dict(0.0)
    assert record["answer"] == (
        "I could not finish within 2 steps. From what I found: nothing conclusive."
    )


def test_it_stops_before_the_scratchpad_outgrows_the_context(tmp_path: Path) -> None:
    long_search = " Action: docsearch\nAction Input: reactor"
    llm = ScriptedLLM(replies=[long_search] * 5 + [" 451 kelvin [1]."], window=420)
    agent = _agent(tmp_path, llm, search_first=False, observation_tokens=60, max_step_tokens=60)
    record = AnswerCollector("react").extend(agent.run("How hot?")).to_dict(0.0)
    assert record["answer"].startswith("I could not finish within")
    for prompt in llm.prompts:
        assert sum(llm.count_tokens(m.content) for m in prompt) + 60 <= 420


def test_a_copy_of_the_prompts_example_is_never_given_as_the_answer(tmp_path: Path) -> None:
    llm = ScriptedLLM(replies=[" x", " Final Answer: The plant opened in 1990 [2]."])
    record = AnswerCollector("react").extend(_agent(tmp_path, llm).run("How hot?")).to_dict(0.0)
    assert record["answer"] == "The documents I searched do not say."
    assert record["citations"] == []


def test_a_copied_example_after_a_search_that_found_passages_is_answered_from_them(
    tmp_path: Path,
) -> None:
    llm = ScriptedLLM(
        replies=[
            " reactor",
            " I know the answer.\nFinal Answer: The plant opened in 1990 [2].",
            "It runs at 451 kelvin [1].",
        ]
    )
    record = AnswerCollector("react").extend(_agent(tmp_path, llm).run("How hot?")).to_dict(0.0)
    assert record["answer"] == "It runs at 451 kelvin [1]."
    assert [c["chunk_id"] for c in record["citations"]] == ["a-0"]
    system, user = llm.prompts[2]
    assert "Final Answer" not in system.content  # the answer call has no example to copy
    assert user.content.startswith("Sources:\n[1] (reactor.md) The Zorblax reactor runs at 451")
    assert record["usage"]["llm_calls"] == 3
