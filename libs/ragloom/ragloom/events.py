"""Typed events that a reasoning pipeline streams to the UI, the CLI and the API.

A pipeline yields these in order; :class:`AnswerCollector` folds a stream into one
:class:`AnswerRecord`, whose :meth:`~AnswerRecord.to_dict` is the JSON that ``ragloom ask
--json`` prints (``answer``, ``mode``, ``citations``, ``steps``, ``usage``, ``grounding``).
Objects stay typed up to that edge: the UI renders a mode's plan and steps from these
types alone, so a plugin mode's plan reads as a built-in's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from ragloom.citation import Citation
from ragloom.grounding_report import GroundingReport
from ragloom.llms.base import Usage
from ragloom.step_outputs import ModeChoice, QuestionCheck

__all__ = [
    "AnswerCollector",
    "AnswerDelta",
    "AnswerRecord",
    "AnswerRevised",
    "AnswerUsage",
    "Citation",
    "CitationsFound",
    "Event",
    "GroundingChecked",
    "LLMCallFinished",
    "ModeChoice",
    "PlanCreated",
    "PlanItem",
    "PlanItemStatus",
    "QuestionCheck",
    "StepEvent",
    "StepFinished",
    "StepStarted",
    "readable_name",
]


@dataclass(frozen=True)
class AnswerDelta:
    """A piece of the answer text, in order."""

    text: str


@dataclass(frozen=True)
class AnswerRevised:
    """The whole answer, revised once streamed (e.g. with citations added): replaces it."""

    text: str


@dataclass(frozen=True)
class CitationsFound:
    """The citations of the answer, once it is complete."""

    citations: list[Citation]


@dataclass(frozen=True)
class GroundingChecked:
    """The answer's specific claims checked against the passages it cites, once it is
    complete (:mod:`ragloom.qa.grounding`); after the decline that replaced it, if any."""

    report: GroundingReport


def readable_name(name: str) -> str:
    """The label of a step whose mode chose none: ``my_step`` reads ``My step`` and
    ``index:notes`` ``Index: notes``."""
    return name.replace("_", " ").replace(":", ": ").capitalize()


def _default_label(event: StepStarted | StepFinished) -> None:
    # Frozen dataclasses: set the fallback once, so every reader sees the same label.
    if not event.label:
        object.__setattr__(event, "label", readable_name(event.name))


def _json_output(output: Any) -> Any:
    """A step's output at the JSON edge: typed outputs give their ``to_dict``."""
    return output.to_dict() if isinstance(output, QuestionCheck | ModeChoice) else output


@dataclass(frozen=True)
class StepStarted:
    """A step of the reasoning began (retrieval, an LLM call, a tool call).

    ``label`` is what the user reads while the step runs (``Searching the documents``),
    chosen by the mode; without one it is :func:`readable_name` of ``name``.
    """

    name: str
    input: Any = None
    label: str = ""

    def __post_init__(self) -> None:
        _default_label(self)

    def to_dict(self) -> dict[str, Any]:
        """The step's entry in the ``steps`` of ``ask --json``."""
        return {"step": self.name, "label": self.label, "event": "started", "input": self.input}


@dataclass(frozen=True)
class StepFinished:
    """A step ended, with its output or its error and how long it took; ``label`` as the
    :class:`StepStarted` of the same step had it."""

    name: str
    seconds: float
    output: Any = None
    error: str | None = None
    label: str = ""

    def __post_init__(self) -> None:
        _default_label(self)

    def to_dict(self) -> dict[str, Any]:
        """The step's entry in the ``steps`` of ``ask --json``: its output or its error."""
        step: dict[str, Any] = {
            "step": self.name,
            "label": self.label,
            "event": "finished",
            "seconds": round(self.seconds, 4),
        }
        if self.error is not None:
            step["error"] = self.error
        else:
            step["output"] = _json_output(self.output)
        return step


@dataclass(frozen=True)
class LLMCallFinished:
    """One LLM call ended; ``purpose`` says which (``answer``, ``plan``, ...)."""

    purpose: str
    usage: Usage

    @property
    def name(self) -> str:
        """Its name among the steps: ``llm:`` and the purpose."""
        return f"llm:{self.purpose}"

    def to_dict(self) -> dict[str, Any]:
        """The call's entry in the ``steps`` of ``ask --json``: its tokens and seconds."""
        return {"step": self.name, "event": "usage", **asdict(self.usage)}


PlanItemStatus = Literal["planned", "dropped", "added"]
"""Whether a plan's step runs as planned, was ``dropped`` before running (it could not
work), or was ``added`` by the mode (not by its planner)."""


@dataclass(frozen=True)
class PlanItem:
    """One step of a plan, before it runs, in the same shape for every mode.

    ``id`` names it (``E1``, ``Q2``); ``text`` says what it does in words (ReWOO's
    ``#Plan`` line, a decomposition's sub-question); ``tool`` and ``input`` are the call it
    makes, where it makes one; ``depends_on`` the ids whose results it uses. ``label`` is
    what the plan shows, chosen by the mode; without one it is ``tool[input]`` for a tool
    call, else ``text``. ``status`` (:data:`PlanItemStatus`) and ``reason`` say whether it
    runs and, for one dropped or added, why.
    """

    id: str
    text: str = ""
    tool: str | None = None
    input: str | None = None
    depends_on: tuple[str, ...] = ()
    label: str = ""
    status: PlanItemStatus = "planned"
    reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "depends_on", tuple(self.depends_on))
        if self.status not in get_args(PlanItemStatus):
            raise ValueError(f"unknown plan step status {self.status!r}")
        if not self.label:
            call = f"{self.tool}[{self.input or ''}]" if self.tool is not None else ""
            object.__setattr__(self, "label", call or self.text)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form. Besides the fields, the keys of earlier versions stay for readers
        of ``ask --json``: ``plan`` (the text of a tool call) or ``question`` (of a step
        without a tool); ``tool`` and ``input`` only where there is a tool; ``status`` and
        ``reason`` only for a step not run as planned."""
        data: dict[str, Any] = {"id": self.id, "label": self.label, "text": self.text}
        if self.tool is not None:
            data.update(plan=self.text, tool=self.tool, input=self.input or "")
        else:
            data["question"] = self.text
        data["depends_on"] = list(self.depends_on)
        if self.status != "planned":
            data.update(status=self.status, reason=self.reason)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanItem:
        """A plan item from its JSON form, or from the dict a mode of an earlier version
        gave (``{"id", "plan", "tool", "input", "depends_on"}``, ``{"id", "question"}``)."""
        text = data.get("text", data.get("plan", data.get("question", "")))
        tool = data.get("tool")
        return cls(
            id=str(data.get("id", "?")),
            text="" if text is None else str(text),
            tool=None if tool is None else str(tool),
            input=None if data.get("input") is None else str(data["input"]),
            depends_on=tuple(str(d) for d in data.get("depends_on") or ()),
            label=str(data.get("label") or ""),
            status=data.get("status") or "planned",
            reason=str(data.get("reason") or ""),
        )


@dataclass(frozen=True)
class PlanCreated:
    """An agent's plan, before it runs: its steps, the planner's text, and whether the
    first plan failed validation and this one is the planner's repair.

    Dicts in ``steps`` (what a mode of an earlier version gave) become :class:`PlanItem`.
    """

    steps: list[PlanItem]
    raw: str
    repaired: bool = False

    def __post_init__(self) -> None:
        if any(not isinstance(item, PlanItem) for item in self.steps):
            items = [
                item if isinstance(item, PlanItem) else PlanItem.from_dict(item)
                for item in self.steps
            ]
            object.__setattr__(self, "steps", items)

    @property
    def name(self) -> str:
        """Its name among the steps: ``plan``."""
        return "plan"

    def to_dict(self) -> dict[str, Any]:
        """The plan's entry in the ``steps`` of ``ask --json``."""
        return {
            "step": self.name,
            "event": "plan",
            "plan": [item.to_dict() for item in self.steps],
            "raw": self.raw,
            "repaired": self.repaired,
        }


Event = (
    AnswerDelta
    | AnswerRevised
    | CitationsFound
    | GroundingChecked
    | StepStarted
    | StepFinished
    | LLMCallFinished
    | PlanCreated
)
StepEvent = StepStarted | StepFinished | PlanCreated | LLMCallFinished
"""The events an answer record keeps as its ``steps``, in order."""


@dataclass(frozen=True)
class AnswerUsage:
    """What a whole question cost: tokens and calls of every LLM call, and wall seconds."""

    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (seconds to the millisecond)."""
        return {**asdict(self), "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class AnswerRecord:
    """One whole answer: its text, the mode that wrote it, its citations, its steps (the
    step events, in order), its cost, what the check before answering found (``precheck``;
    ``None`` when the mode ran none) and its grounding check (``None``: not checked, e.g. a
    mode that does not check, or the check turned off). :meth:`to_dict` is what ``ask
    --json`` prints."""

    answer: str
    mode: str
    citations: list[Citation] = field(default_factory=list)
    steps: list[StepEvent] = field(default_factory=list)
    usage: AnswerUsage = field(default_factory=AnswerUsage)
    precheck: QuestionCheck | None = None
    grounding: GroundingReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of the answer."""
        return {
            "answer": self.answer,
            "mode": self.mode,
            "citations": [c.to_dict() for c in self.citations],
            "steps": [step.to_dict() for step in self.steps],
            "usage": self.usage.to_dict(),
            "precheck": None if self.precheck is None else self.precheck.to_dict(),
            "grounding": None if self.grounding is None else self.grounding.to_dict(),
        }


@dataclass
class AnswerCollector:
    """Folds a stream of events into an :class:`AnswerRecord`."""

    mode: str
    answer: str = ""
    citations: list[Citation] = field(default_factory=list)
    steps: list[StepEvent] = field(default_factory=list)
    llm_usages: list[Usage] = field(default_factory=list)
    precheck: QuestionCheck | None = None
    grounding: GroundingReport | None = None

    def add(self, event: Event) -> None:
        """Take one event into the record."""
        if isinstance(event, AnswerDelta):
            self.answer += event.text
        elif isinstance(event, AnswerRevised):
            self.answer = event.text
        elif isinstance(event, CitationsFound):
            self.citations = list(event.citations)
        elif isinstance(event, GroundingChecked):
            self.grounding = event.report
        elif isinstance(event, StepStarted | StepFinished | PlanCreated | LLMCallFinished):
            if isinstance(event, LLMCallFinished):
                self.llm_usages.append(event.usage)
            elif isinstance(event, StepFinished) and isinstance(event.output, QuestionCheck):
                self.precheck = event.output
            self.steps.append(event)

    def extend(self, events: Iterable[Event]) -> AnswerCollector:
        """Take every event of a stream; returns ``self`` for chaining."""
        for event in events:
            self.add(event)
        return self

    def record(self, seconds: float) -> AnswerRecord:
        """The answer so far; ``seconds`` is the wall time of the whole question."""
        total = Usage.total(self.llm_usages)
        usage = AnswerUsage(
            prompt_tokens=total.prompt_tokens,
            prompt_tokens_evaluated=total.prompt_tokens_evaluated,
            completion_tokens=total.completion_tokens,
            llm_calls=len(self.llm_usages),
            seconds=seconds,
        )
        return AnswerRecord(
            self.answer.strip(),
            self.mode,
            list(self.citations),
            list(self.steps),
            usage,
            self.precheck,
            self.grounding,
        )

    def to_dict(self, seconds: float) -> dict[str, Any]:
        """The JSON shape of the answer (:meth:`record`, then :meth:`AnswerRecord.to_dict`)."""
        return self.record(seconds).to_dict()
