"""Reading one ReAct step from what an LLM wrote.

The expected shape is ``Thought: ... / Action: tool / Action Input: ...`` or ``Thought:
... / Final Answer: ...``. Small models stray from it, so this also accepts code fences,
``Action: tool[input]``, JSON or quoted inputs, numbered keywords (``Action 1:``), any
case, and stray whitespace; an action naming no tool (``Action: None``, ``N/A``, or
LangChain's ``Action: Final Answer`` with the answer as its input) finishes the step. What
cannot be read raises :class:`ReActFormatError`, whose message is written for the model to
correct itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FINAL_ANSWER", "ReActAction", "ReActFinish", "ReActFormatError", "parse_react_step"]

FINAL_ANSWER = re.compile(r"final\s*answer\s*:", re.I)
"""Where a final answer starts, in any case and spacing (``Final answer:``)."""

# "Action:" starts a line, follows "Thought:" on it (an open turn's "Thought: Action:
# x"), or starts a sentence ("I need the manual. Action: docsearch[...]"); inside one it
# is prose ("My next action: search the manual"). A number is "(?:\d+\s*)?", never
# "\s*\d*\s*": two runs of optional whitespace that meet make the engine try every split
# of a long run of spaces, quadratic in its length.
_ACTION = re.compile(
    r"(?:^[ \t]*(?:thought\s*(?:\d+\s*)?:[ \t]*)?|(?<=[.!?])[ \t]+)"
    r"action\s*(?:\d+\s*)?:[ \t]*(?P<value>.*)$",
    re.I | re.M,
)
# An action naming no tool, or LangChain's "Action: Final Answer", finishes the step.
_NO_TOOL = re.compile(r"(?:none|n/?a|final\s*answer)[\s.]*", re.I)
_ACTION_INPUT = re.compile(r"(?:^|(?<=\s))action\s*(?:\d+\s*)?input\s*(?:\d+\s*)?:", re.I | re.M)
_STOP = re.compile(
    r"^[ \t]*(observation|thought|action|final\s*answer)\s*(?:\d+\s*)?:", re.I | re.M
)
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)
_BRACKETED = re.compile(r"^(?P<tool>[\w.-]+)\s*\[(?P<input>.*)\]\s*$", re.S)


class ReActFormatError(ValueError):
    """The text holds neither a whole action nor a final answer."""


@dataclass(frozen=True)
class ReActAction:
    """Call ``tool`` with ``tool_input``."""

    thought: str
    tool: str
    tool_input: str


@dataclass(frozen=True)
class ReActFinish:
    """The agent's final answer."""

    thought: str
    answer: str


def _clean(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        if text.lower().startswith("json"):
            text = text[4:].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1].strip()
    return text


def _thought(text: str, end: int) -> str:
    head = text[:end].strip()
    return re.sub(r"^\s*thought\s*:\s*", "", head, flags=re.I).strip()


def _final_answer(answer: str) -> str:
    """What follows ``Final Answer:``, up to an imagined ``Observation:``."""
    if stop := re.search(r"^[ \t]*observation\s*:", answer, re.I | re.M):
        answer = answer[: stop.start()]
    answer = answer.strip()
    if not answer:
        raise ReActFormatError("the Final Answer is empty: write the answer after it")
    return answer


def _answer_without_tool(value: str, rest: str) -> str:
    """The answer of an action naming no tool (``Action: None`` / ``N/A`` / ``Final
    Answer``): a ``Final Answer:`` after it, else what follows on its line after a colon
    (``Action: Final Answer: 451``), else its ``Action Input:`` (LangChain's form)."""
    if final := FINAL_ANSWER.search(rest):
        return _final_answer(rest[final.end() :])
    _, colon, inline = value.partition(":")
    answer = _clean(inline) if colon else ""
    if not answer and (given := _ACTION_INPUT.search(rest)):
        answer = rest[given.end() :]
        if stop := _STOP.search(answer):
            answer = answer[: stop.start()]
        answer = _clean(answer)
    if not answer or _NO_TOOL.fullmatch(answer):
        raise ReActFormatError(
            "'Action:' names no tool: to answer, write 'Final Answer:' with the answer"
        )
    return answer


def parse_react_step(text: str) -> ReActAction | ReActFinish:
    """The action or final answer in ``text`` (whichever comes first)."""
    text = text.replace("```json", "\n").replace("```", "\n")
    final = FINAL_ANSWER.search(text)
    action = _ACTION.search(text)
    # A model that wrote an action and then imagined its result and an answer must wait
    # for the real observation: the first of the two wins.
    if final and (action is None or final.start() < action.start()):
        return ReActFinish(_thought(text, final.start()), _final_answer(text[final.end() :]))
    if action is None:
        raise ReActFormatError(
            "write either 'Action:' with a tool name and then 'Action Input:' with its "
            "input, or 'Final Answer:' with the answer"
        )
    value = _clean(action["value"])
    rest = text[action.end() :]
    if _NO_TOOL.fullmatch(re.split(r"[:\[(]", value, maxsplit=1)[0]):
        return ReActFinish(_thought(text, action.start()), _answer_without_tool(value, rest))
    if bracketed := _BRACKETED.match(value):
        return ReActAction(
            _thought(text, action.start()),
            bracketed["tool"].lower(),
            _clean(bracketed["input"]),
        )
    # "Action: The calculator, ..." (the 0.5B model, in a turn of its own) names calculator.
    value = _LEADING_ARTICLE.sub("", value)
    tool = re.split(r"[\s(\[{:,]", value, maxsplit=1)[0].strip("`'\"").lower() if value else ""
    given = _ACTION_INPUT.search(rest)
    if not tool:
        raise ReActFormatError("'Action:' names no tool")
    if given is None:
        raise ReActFormatError(f"'Action: {tool}' has no 'Action Input:' line after it")
    tool_input = rest[given.end() :]
    if stop := _STOP.search(tool_input):
        tool_input = tool_input[: stop.start()]
    tool_input = _clean(tool_input)
    if not tool_input:
        raise ReActFormatError(f"the 'Action Input:' of {tool} is empty")
    return ReActAction(_thought(text, action.start()), tool, tool_input)
