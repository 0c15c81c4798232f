"""Contract checks for what a plugin registers; each raises ``AssertionError`` saying why.

They check what Ragloom relies on, not what a plugin does: settings that the UI can
draw, events that the UI and ``ask --json`` can render, and tool failures that an agent
can read (:class:`~ragloom.agents.tools.ToolResult` with an error code, never an
exception). Readers and index types: :mod:`ragloom_app.testing.index_contracts`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from ragloom.agents.tools import (
    BaseTool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    ToolRunner,
    check_runnable,
)
from ragloom.agents.tools.registry import is_tool_name
from ragloom.agents.tools.runner import tools_sandbox
from ragloom.event_checks import event_problem
from ragloom.events import (
    AnswerCollector,
    AnswerDelta,
    AnswerRevised,
    CitationsFound,
    PlanCreated,
    PlanItem,
    StepFinished,
    StepStarted,
)
from ragloom.llms.base import ChatLLM
from ragloom.qa import cited_numbers
from ragloom.retrieval import Retriever
from ragloom.sandbox import Sandbox
from ragloom_app.plugins.rules import (
    COMPONENTS,
    RuleError,
    check_reasoning_info,
    check_setting_specs,
)
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState
from ragloom_app.testing.fakes import ReplayLLM, StaticRetriever

__all__ = [
    "COMPONENTS",
    "SAMPLE_PASSAGES",
    "check_reasoning",
    "check_settings_schema",
    "check_tool",
    "fail_contract",
]

SAMPLE_PASSAGES = [
    "The Zorblax reactor runs at 451 kelvin.",
    "The cooling loop is flushed every 90 days by the night shift.",
]
"""What :func:`check_reasoning` retrieves from when it is given no retrievers."""


def fail_contract(owner: str, message: str) -> None:
    """Raise the ``AssertionError`` of a broken contract: ``"<owner>: <message>"``."""
    raise AssertionError(f"{owner}: {message}")


def check_settings_schema(specs: Any, owner: str = "settings") -> None:
    """Check settings as ``get_user_settings()`` / ``get_admin_settings()`` return them,
    by the rules the app registers a plugin by (:mod:`ragloom_app.plugins.rules`)."""
    try:
        check_setting_specs(specs, owner)
    except RuleError as exc:
        raise AssertionError(str(exc)) from None


def _check_plan(where: str, plan: PlanCreated) -> None:
    """A plan the UI can draw: ``PlanItem`` steps with ids, each once, depending on ids of
    the same plan; a step dropped or added says why."""
    ids: list[str] = []
    for item in plan.steps:
        if not isinstance(item, PlanItem) or not item.id:
            raise AssertionError(f"{where}: each step of a plan must be a PlanItem with an id")
        if item.id in ids:
            raise AssertionError(f"{where}: the plan has two steps {item.id!r}")
        if item.status != "planned" and not item.reason.strip():
            raise AssertionError(f"{where}: step {item.id!r} is {item.status} without a reason")
        ids.append(item.id)
    for item in plan.steps:
        unknown = [d for d in item.depends_on if d not in ids]
        if unknown:
            raise AssertionError(
                f"{where}: step {item.id!r} depends on {', '.join(unknown)}, not in the plan"
            )


def _check_events(owner: str, events: list[Any]) -> None:
    open_steps: list[str] = []
    citations_seen = False
    for position, event in enumerate(events):
        where = f"{owner}: event {position} ({type(event).__name__})"
        if (problem := event_problem(event)) is not None:
            raise AssertionError(f"{where}: {problem}")
        if isinstance(event, StepStarted):
            open_steps.append(event.name)
        elif isinstance(event, StepFinished):
            if event.name in open_steps:
                open_steps.remove(event.name)
            elif event.name != "error":
                raise AssertionError(f"{where}: step {event.name!r} finished, never started")
        elif isinstance(event, PlanCreated):
            _check_plan(where, event)
        elif isinstance(event, CitationsFound):
            if citations_seen:
                raise AssertionError(f"{where}: the citations must come once")
            citations_seen = True
        elif isinstance(event, AnswerDelta | AnswerRevised) and citations_seen:
            raise AssertionError(f"{where}: the answer changed after its citations")
    if open_steps:
        fail_contract(owner, f"steps started and never finished: {', '.join(open_steps)}")


def _builtin_reasonings() -> dict[str, type[BaseReasoning]]:
    """Ragloom's own modes by id (imported here: they are the app's, not this module's)."""
    from ragloom_app.reasoning.auto import AutoReasoning
    from ragloom_app.reasoning.decompose import DecomposeReasoning
    from ragloom_app.reasoning.fullqa import FullQAReasoning
    from ragloom_app.reasoning.react import ReActReasoning
    from ragloom_app.reasoning.rewoo import ReWOOReasoning

    classes = (FullQAReasoning, DecomposeReasoning, ReActReasoning, ReWOOReasoning, AutoReasoning)
    return {cls.get_info().id: cls for cls in classes}


def check_reasoning(
    cls: type[BaseReasoning],
    *,
    llm: ChatLLM | None = None,
    retrievers: Sequence[Retriever] | None = None,
    question: str = "At what temperature does the Zorblax reactor run?",
    settings: Mapping[str, Any] | None = None,
    tools: ToolRegistry | None = None,
    reasonings: Mapping[str, type[BaseReasoning]] | None = None,
) -> dict[str, Any]:
    """Check a reasoning class, run it once and return the ``ask --json`` record.

    A mode that hands questions on to others (as ``auto`` does) finds them by id in
    ``reasonings`` (default: the built-in modes and ``cls`` itself).

    By default it answers with a :class:`ReplayLLM` over :data:`SAMPLE_PASSAGES`; pass
    ``llm`` (with replies your mode's prompts expect) and ``retrievers`` to run it on
    your own. The stream must be Event objects, steps must finish, an answer must come,
    and every citation must be cited as ``[n]`` in the answer.
    """
    owner = getattr(cls, "__qualname__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, BaseReasoning)):
        fail_contract(owner, "is not a BaseReasoning subclass")
    info = cls.get_info()
    try:
        check_reasoning_info(info, owner)
    except RuleError as exc:
        raise AssertionError(str(exc)) from None
    check_settings_schema(cls.get_user_settings(), f"{owner}.get_user_settings()")
    llm = llm or ReplayLLM()
    modes = dict(reasonings) if reasonings is not None else _builtin_reasonings()
    modes.setdefault(info.id, cls)
    state = ReasoningState(
        llm=llm,
        tools=tools or ToolRegistry(),
        llm_named=lambda _: llm,
        reasoning_named=modes.__getitem__,
    )
    if retrievers is None:
        retrievers = [StaticRetriever(passages=SAMPLE_PASSAGES)]
    pipeline = cls.get_pipeline(cls.resolve_settings(settings), state, list(retrievers))
    if not isinstance(pipeline, BaseReasoning):
        fail_contract(
            owner, f"get_pipeline() returned {type(pipeline).__name__}, not a BaseReasoning"
        )
    events = list(pipeline.stream(question))
    _check_events(owner, events)
    record = AnswerCollector(info.id).extend(events).to_dict(0.0)
    if not record["answer"]:
        fail_contract(owner, "streamed no answer (AnswerDelta or AnswerRevised)")
    cited = cited_numbers(record["answer"], 10_000)
    for citation in record["citations"]:
        if citation["number"] not in cited:
            fail_contract(owner, f"citation [{citation['number']}] is not cited in the answer")
    json.dumps(record, default=str)  # what `ask --json` prints must serialise
    return record


def check_tool(
    tool_cls: type[BaseTool],
    sample_input: str | dict[str, Any],
    *,
    expect: str | None = None,
    bad_input: str | dict[str, Any] | None = None,
    context: ToolContext | None = None,
) -> ToolResult:
    """Check a tool class: its metadata, a successful call, and failures as results.

    ``sample_input`` must succeed (and its content contain ``expect`` if given);
    ``bad_input`` must fail with an error code. Garbage input must never raise; a
    ``sample_input`` given as text must pass ``check_input``. A sandboxed tool (the
    default) must also succeed with ``sample_input`` in the tool sandbox, as the agents
    call it: its class importable, it and its result picklable.
    """
    owner = getattr(tool_cls, "__qualname__", repr(tool_cls))
    if not (isinstance(tool_cls, type) and issubclass(tool_cls, BaseTool)):
        fail_contract(owner, "is not a BaseTool subclass")
    if not is_tool_name(getattr(tool_cls, "name", None)):
        fail_contract(
            owner, "name must be a lower-case identifier (agents write it in their plans)"
        )
    if not isinstance(getattr(tool_cls, "description", None), str) or not tool_cls.description:
        fail_contract(owner, "needs a description (it goes into the agents' prompts)")
    arguments = getattr(tool_cls, "Arguments", None)
    if not (isinstance(arguments, type) and issubclass(arguments, BaseModel)):
        fail_contract(owner, "Arguments must be a pydantic BaseModel subclass")
    schema = tool_cls.parameters_schema()
    if schema.get("type") != "object":
        fail_contract(owner, "the arguments' JSON schema must describe an object")
    json.dumps(schema)
    tool = tool_cls.from_context(context or ToolContext(llm=ReplayLLM()))
    if not isinstance(tool, tool_cls):
        fail_contract(
            owner, f"from_context() returned {type(tool).__name__}, not a {tool_cls.__name__}"
        )
    result = tool.invoke(sample_input)
    if not isinstance(result, ToolResult):
        fail_contract(owner, f"run() must return a ToolResult, got {type(result).__name__}")
    if not result.ok or not isinstance(result.content, str) or not result.content:
        fail_contract(
            owner, f"the sample input failed or gave no content: {result.as_observation()}"
        )
    if expect is not None and expect not in result.content:
        fail_contract(owner, f"expected {expect!r} in the result, got {result.content!r}")
    if isinstance(sample_input, str):
        _check_tool_input_check(owner, tool_cls, sample_input)
    garbage: list[str | dict[str, Any]] = ["", "{", "[1, 2]", {"no_such_argument": [None]}]
    for raw in [*garbage, *([bad_input] if bad_input is not None else [])]:
        try:
            outcome = tool.invoke(raw)
        except Exception as exc:
            fail_contract(
                owner, f"invoke({raw!r}) raised {type(exc).__name__}: {exc}; return a failure"
            )
        if not isinstance(outcome, ToolResult):
            fail_contract(owner, f"invoke({raw!r}) must return a ToolResult")
        if outcome.error is not None and not (outcome.error.code and outcome.error.message):
            fail_contract(owner, f"invoke({raw!r}) failed without an error code and message")
    if bad_input is not None and tool.invoke(bad_input).ok:
        fail_contract(owner, f"the bad input {bad_input!r} did not fail")
    if tool_cls.sandboxed:
        _check_tool_in_sandbox(owner, tool_cls, tool, sample_input)
    return result


def _check_tool_input_check(owner: str, tool_cls: type[BaseTool], sample_input: str) -> None:
    """``check_input`` lets the sample through (it runs) and answers ``None`` or a text."""
    try:
        reason = tool_cls.check_input(sample_input)
    except Exception as exc:
        fail_contract(owner, f"check_input() raised {type(exc).__name__}: {exc}")
    if reason is not None:
        fail_contract(owner, f"check_input() refuses the sample input, which runs: {reason}")


def _check_tool_in_sandbox(
    owner: str, tool_cls: type[BaseTool], tool: BaseTool, sample_input: str | dict[str, Any]
) -> None:
    """The sample call, through a ToolRunner into the tool sandbox's worker process."""
    try:
        check_runnable(tool_cls)
    except TypeError as exc:
        fail_contract(owner, str(exc))
    raw = sample_input if isinstance(sample_input, str) else json.dumps(sample_input)
    # A sandbox of its own, with the app's limits: its worker starts with today's sys.path
    # (a test may have just put the plugin on it) and leaves the app's workers alone.
    limits = replace(tools_sandbox().limits, workers=1)
    box = Sandbox(f"check_tool:{tool_cls.__qualname__}", limits)
    try:
        outcome = ToolRunner(retries=0, sandbox=box).call(tool, raw).result
    finally:
        box.close()
    if not outcome.ok:
        fail_contract(
            owner,
            f"the sample input failed in the tool sandbox: {outcome.as_observation()} (a "
            "sandboxed tool runs in a worker process: its class must be importable and it "
            "and its result picklable; or set `sandboxed = False`)",
        )
