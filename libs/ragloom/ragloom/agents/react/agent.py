"""The ReAct agent: think, act, observe, repeat, then answer citing what it found.

The ``Thought / Action / Action Input / Observation`` steps take turns with their
observations, or stay in one assistant turn the model continues
(:mod:`ragloom.agents.react.transcript`). Generation stops at
``Observation:``, so the model never invents a tool's result. Every observation is
trimmed to a token budget, and the agent stops early when the next step would not fit
the context. After ``max_steps`` without an answer it says so and answers from what it
found.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Generator, Iterator, Sequence

from theflow import Param

from ragloom.agents.budget import trim_to_tokens
from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.react.parser import (
    FINAL_ANSWER,
    ReActAction,
    ReActFormatError,
    parse_react_step,
)
from ragloom.agents.react.transcript import ReActTranscript
from ragloom.agents.tools.base import BaseTool, ToolResult
from ragloom.agents.tools.runner import ToolCall, ToolRunner, call_record, shown_input
from ragloom.base import BaseComponent
from ragloom.events import (
    AnswerDelta,
    AnswerRevised,
    CitationsFound,
    Event,
    LLMCallFinished,
    StepFinished,
    StepStarted,
)
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions, LLMResult, ToolSpec
from ragloom.qa.answer import CitedAnswerer, cite_answer
from ragloom.qa.grounding import GroundingCheck
from ragloom.schema import RetrievedChunk

__all__ = ["REACT_SYSTEM_PROMPT", "ReActAgent"]

logger = logging.getLogger(__name__)

REACT_SYSTEM_PROMPT = """Answer the user's question from their documents. You have these tools:
{tools}

Use this format:
Thought: what to do next
Action: the tool to use, one of [{names}]
Action Input: the input for the tool
Observation: the tool's result
... (Thought, Action, Action Input and Observation may repeat)
Thought: I know the answer.
Final Answer: the answer in your own words, one to three sentences, each ending with the \
number of the passage it uses, for example: {example}"""

UNFINISHED = "I could not finish within {steps} steps. From what I found:"

NATIVE_SYSTEM_PROMPT = (
    "Answer the user's question from their documents: search them with the tools, then "
    "answer in your own words, one to three sentences; cite a passage by putting its number "
    "in square brackets at the end of the sentence that uses it."
)
# Without an example the 0.5B model rarely wrote "Final Answer:" (it used all its steps on
# 4 of 4 benchmark questions); with one it sometimes copies it, so a copy is removed.
EXAMPLE_ANSWER = "The plant opened in 1990 [2]."
SEARCH_FIRST = "Thought: I should search the documents first.\nAction: docsearch\nAction Input:"
STOP_SEQUENCES = ("\nObservation:", "Observation:")


FINAL_LABEL = "Writing what was found"


def _thinking(number: int) -> str:
    return f"Thinking (step {number})"


def _action_key(action: ReActAction) -> tuple[str, str]:
    return action.tool, " ".join(action.tool_input.lower().split())


def without_example(answer: str) -> str:
    """``answer`` without the prompt's example sentence, should the model have copied it."""
    return " ".join(answer.replace(EXAMPLE_ANSWER, " ").split())


class ReActAgent(BaseComponent):
    """Thought / Action / Observation loop over one request's tools."""

    llm: ChatLLM = Param(help="The chat model that reasons and answers.")
    tools: dict[str, BaseTool] = Param(help="This request's tools, by name.")
    ledger: EvidenceLedger = Param(
        default_callback=lambda _: EvidenceLedger(), help="Numbers the documents found."
    )
    max_steps: int = Param(5, help="Most LLM calls before the agent must answer.")
    max_step_tokens: int = Param(200, help="Most tokens one step may write.")
    observation_tokens: int = Param(500, help="Most tokens of one observation.")
    max_calls_per_step: int = Param(
        3, help="Most tool calls run of one reply (native tool calling); the rest are not."
    )
    search_first: bool = Param(
        True,
        help="Start with a document search: for the question itself, or for a query the "
        "model writes in an open turn or a native tool call.",
    )
    open_turn: bool = Param(
        False,
        help="Keep the steps in one assistant turn that the model continues (LLMs that can); "
        "off: the question's search comes first and steps and observations take turns.",
    )
    native_tools: bool | None = Param(
        None, help="Use the endpoint's native tool calling (None: where the LLM has it)."
    )
    tool_timeout: float = Param(
        60.0, help="Seconds a tool call may take (a tool's own limit may be shorter)."
    )
    tool_retries: int = Param(2, help="Retries of a call whose error is worth retrying.")
    deadline: float | None = Param(
        None, help="A time.monotonic() time past which no tool call runs (the answer's)."
    )
    check_grounding: bool = Param(
        True, help="Check the answer's specifics against the passages it cites (qa.grounding)."
    )
    tool_results: list[str] = Param(
        default_callback=lambda _: [],
        help="Results of this request's calls that found no document (a calculator's): "
        "the grounding check counts a specific they hold as found.",
    )

    def system_prompt(self) -> str:
        """Instructions and tools (stable, so llama.cpp reuses the evaluated prefix)."""
        tools = "\n".join(f"{t.name}: {t.description}" for t in self.tools.values())
        return REACT_SYSTEM_PROMPT.format(
            tools=tools, names=", ".join(self.tools), example=EXAMPLE_ANSWER
        )

    def _generate(self, transcript: ReActTranscript, final: bool = False) -> LLMResult:
        options = GenerationOptions(
            max_tokens=self.max_step_tokens,
            temperature=0.0,
            stop=STOP_SEQUENCES,
            continue_assistant=transcript.open_turn,
        )
        return self.llm.run(transcript.messages(final), options)

    def _not_run(self, position: int, prompt_tokens: int) -> str | None:
        """Why the call at ``position`` of one reply is not run, or ``None`` to run it."""
        if position >= self.max_calls_per_step:
            return f"at most {self.max_calls_per_step} tool calls of one step are run"
        if not self._room_for_a_step(prompt_tokens):
            return "the context has no room for its result"
        return None

    def _room_for_a_step(self, prompt_tokens: int) -> bool:
        """Whether one more step, its observation and a final answer fit the context
        after a prompt of ``prompt_tokens``."""
        reserve = 2 * self.max_step_tokens + self.observation_tokens + 96
        return prompt_tokens + reserve <= self.llm.context_window

    def _act(
        self, number: int, action: ReActAction, runner: ToolRunner
    ) -> Generator[Event, None, str]:
        """Run one action, yielding its events; return the observation the model sees."""
        name, label = f"step{number}:{action.tool}", f"Step {number}: calling {action.tool}"
        yield StepStarted(name, {"input": shown_input(action.tool_input)}, label=label)
        tool = self.tools.get(action.tool)
        if tool is None:
            available = ", ".join(self.tools)
            message = f"there is no tool {action.tool!r}; available: {available}"
            call = ToolCall(ToolResult.failure("unknown_tool", message), 0.0, 0)
        else:
            call = runner.call(tool, action.tool_input)
        result = call.result
        observation = result.as_observation()
        if result.ok and result.sources:
            observation = self._numbered(result.sources, observation)
        elif result.ok:
            self.tool_results.append(observation)
        record = call_record(action.tool_input, result, call.attempts)
        error = None if result.ok else observation
        yield StepFinished(name, call.seconds, output=record, error=error, label=label)
        if result.usage is not None:
            yield LLMCallFinished(f"tool:{action.tool}", result.usage)
        return trim_to_tokens(
            observation.strip() or "(empty)", self.observation_tokens, self.llm.count_tokens
        )

    def _numbered(self, sources: Sequence[RetrievedChunk], content: str) -> str:
        """The observation of a result with ``sources``, each numbered in the request's
        ledger so that the answer can cite it and the grounding check sees it.

        ``docsearch`` numbers its passages in the ledger itself and shows them as ``[n]``
        lines; a plugin's tool cannot know those numbers, so its text is replaced by its
        sources as numbered passages, as ReWOO's solver shows them."""
        numbers = self.ledger.add(sources)
        if all(re.search(rf"^\[{n}\] ", content, re.M) for n in numbers):
            return content
        return self.ledger.block(numbers=numbers).text

    def stream(self, question: str) -> Iterator[Event]:
        """Reason and act until a final answer; yield every step's events."""
        native = self.native_tools
        if native is None:
            native = self.llm.supports_tool_calls
        if native:
            yield from self._stream_native(question)
            return
        runner = ToolRunner(
            timeout=self.tool_timeout, retries=self.tool_retries, deadline=self.deadline
        )
        system = self.system_prompt()
        open_turn = self.open_turn and self.llm.continues_assistant_turn
        transcript = ReActTranscript(system, question.strip(), open_turn)
        done: set[tuple[str, str]] = set()
        if self.search_first and "docsearch" in self.tools:
            if transcript.open_turn:
                transcript.opening = SEARCH_FIRST  # the model writes the query
            else:
                # A new turn cannot be made to start with a search, so the question itself
                # is the first query.
                first = ReActAction("", "docsearch", transcript.question)
                transcript.searched = yield from self._act(0, first, runner)
                done.add(_action_key(first))
        answer = None
        calls = 0
        repeated = False
        while calls < self.max_steps and self._room_for_a_step(
            transcript.tokens(self.llm.count_tokens)
        ):
            calls += 1
            started = time.perf_counter()
            think, label = f"think{calls}", _thinking(calls)
            yield StepStarted(think, None, label=label)
            result = self._generate(transcript)
            yield LLMCallFinished("react", result.usage)
            written = result.text.rstrip()
            try:
                parsed = parse_react_step(transcript.step_text(written))
            except ReActFormatError as exc:
                yield StepFinished(
                    think, time.perf_counter() - started, error=str(exc), label=label
                )
                transcript.add(written, f"Invalid format: {exc}.")
                continue
            yield StepFinished(
                think,
                time.perf_counter() - started,
                output={"text": written.strip()},
                label=label,
            )
            if not isinstance(parsed, ReActAction):
                answer = parsed.answer
                break
            if _action_key(parsed) in done:
                # Small models loop on an action whose result they already have (told so,
                # the 0.5B model copied the telling into its answer): make them answer.
                repeated = True
                break
            done.add(_action_key(parsed))
            observation = yield from self._act(calls, parsed, runner)
            transcript.add(written, observation)
        preface = ""
        if answer is None:
            reason = "it repeated an action" if repeated else f"no answer after {calls} steps"
            preface = "" if repeated else f"{UNFINISHED.format(steps=calls)} "
            answer = yield from self._forced_answer(transcript, reason)
        yield from self._finish(question, without_example(answer), preface)

    def _stream_native(self, question: str) -> Iterator[Event]:
        """The same loop through the endpoint's tool calling: no text format to parse."""
        runner = ToolRunner(
            timeout=self.tool_timeout, retries=self.tool_retries, deadline=self.deadline
        )
        specs = tuple(
            ToolSpec(t.name, t.description, t.parameters_schema()) for t in self.tools.values()
        )
        messages = [
            ChatMessage("system", NATIVE_SYSTEM_PROMPT),
            ChatMessage("user", question.strip()),
        ]
        answer = None
        calls = 0
        stopped_calling = False
        # Its own prompt, not the text loop's; tool results add to it as they come.
        used = self.llm.count_tokens("".join(m.content for m in messages))
        while calls < self.max_steps and self._room_for_a_step(used):
            calls += 1
            first = calls == 1 and self.search_first and "docsearch" in self.tools
            options = GenerationOptions(
                max_tokens=self.max_step_tokens,
                tools=specs,
                tool_choice="docsearch" if first else "auto",
            )
            started = time.perf_counter()
            think, label = f"think{calls}", _thinking(calls)
            yield StepStarted(think, None, label=label)
            result = self.llm.run(messages, options)
            yield LLMCallFinished("react", result.usage)
            requested = [{"tool": c.name, "arguments": c.arguments} for c in result.tool_calls]
            yield StepFinished(
                think,
                time.perf_counter() - started,
                output={"text": result.text.strip(), "tool_calls": requested},
                label=label,
            )
            if not result.tool_calls:
                answer = result.text.strip()
                stopped_calling = True
                break
            messages.append(ChatMessage("assistant", result.text, tool_calls=result.tool_calls))
            used += self.llm.count_tokens(result.text)
            for position, call in enumerate(result.tool_calls):
                # A model calling tools in parallel may ask for many in one reply: each
                # result must fit the context as a step's does, and every call be answered.
                skipped = self._not_run(position, used)
                if skipped is None:
                    action = ReActAction("", call.name, call.arguments)
                    observation = yield from self._act(calls, action, runner)
                else:
                    logger.info("tool call %s of step %d not run: %s", call.name, calls, skipped)
                    observation = f"Not run: {skipped}."
                messages.append(ChatMessage("tool", observation, tool_call_id=call.id))
                used += self.llm.count_tokens(observation + call.arguments)
        if not answer:
            result = self.llm.run(
                messages,
                GenerationOptions(max_tokens=self.max_step_tokens, tools=specs, tool_choice="none"),
            )
            yield LLMCallFinished("react-final", result.usage)
            # A model that stopped calling tools with nothing to say just gets asked again.
            preface = "" if stopped_calling else f"{UNFINISHED.format(steps=calls)} "
            yield from self._finish(question, result.text.strip(), preface)
            return
        yield from self._finish(question, answer, "")

    def _forced_answer(
        self, transcript: ReActTranscript, reason: str
    ) -> Generator[Event, None, str]:
        """The model's answer when it is made to stop; empty if it wrote none."""
        started = time.perf_counter()
        yield StepStarted("final", {"reason": reason}, label=FINAL_LABEL)
        # The loop kept room for this call: the transcript always fits.
        result = self._generate(transcript, final=True)
        yield LLMCallFinished("react-final", result.usage)
        found = result.text.split("\nAction", 1)[0]
        if not transcript.open_turn:  # a new turn may start over with "Thought: ..."
            # As the parser reads it: "Final answer:" is an answer too.
            final = FINAL_ANSWER.search(found)
            found = found[final.end() :] if final else ""
        found = found.strip()
        yield StepFinished(
            "final", time.perf_counter() - started, output={"text": found}, label=FINAL_LABEL
        )
        return found

    def _finish(self, question: str, answer: str, preface: str) -> Iterator[Event]:
        """Stream ``preface`` and ``answer`` with its citations.

        An answer without text, when the searches found passages, is written from them in
        one more call, as FullQA does: the model had copied the prompt's example (12 of 74
        benchmark questions) or written nothing.
        """
        if preface:
            yield AnswerDelta(preface)
        answerer = CitedAnswerer(llm=self.llm, check_grounding=self.check_grounding)
        if not answer and len(self.ledger):
            for event in answerer.stream(question, self.ledger.items):
                if isinstance(event, AnswerRevised) and preface:
                    event = AnswerRevised(preface + event.text)
                yield event
            return
        if not answer:
            answer = "nothing conclusive." if preface else "The documents I searched do not say."
        yield AnswerDelta(answer)
        # The preface is Ragloom's words, not a claim: its step count is no invented number.
        check = GroundingCheck(question, (*self.tool_results, preface), own_words=(preface,))
        grounding = check if self.check_grounding else None
        citations = yield from cite_answer(preface + answer, self.ledger.block(), grounding)
        yield CitationsFound(citations)

    def run(self, question: str) -> list[Event]:
        """Every event of :meth:`stream`, as a list."""
        return list(self.stream(question))
