"""Typed events that a reasoning pipeline streams to the UI, the CLI and the API.

A pipeline yields these in order; :class:`AnswerCollector` folds a stream into the one JSON
shape ``ragloom ask --json`` prints (``answer``, ``mode``, ``citations``, ``steps``, ``usage``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ragloom.llms.base import Usage

__all__ = [
    "AnswerCollector",
    "AnswerDelta",
    "AnswerRevised",
    "Citation",
    "CitationsFound",
    "Event",
    "LLMCallFinished",
    "PlanCreated",
    "StepFinished",
    "StepStarted",
]


@dataclass(frozen=True)
class Citation:
    """What an ``[n]`` in an answer refers to: a chunk of a source file.

    ``score`` is the retrieval score and ``found_by`` each retriever's own score (e.g.
    ``{"vector": 0.62, "fulltext": 7.1}``). ``highlight`` is the ``(start, end)`` span of
    ``text`` that the answer quotes, if it quotes one.
    """

    number: int
    source: str
    page: int | None
    text: str
    chunk_id: str
    score: float = 0.0
    start: int = 0
    end: int = 0
    found_by: dict[str, float] = field(default_factory=dict)
    highlight: tuple[int, int] | None = None


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
class StepStarted:
    """A step of the reasoning began (retrieval, an LLM call, a tool call)."""

    name: str
    input: Any = None


@dataclass(frozen=True)
class StepFinished:
    """A step ended, with its output or its error and how long it took."""

    name: str
    seconds: float
    output: Any = None
    error: str | None = None


@dataclass(frozen=True)
class LLMCallFinished:
    """One LLM call ended; ``purpose`` says which (``answer``, ``plan``, ...)."""

    purpose: str
    usage: Usage


@dataclass(frozen=True)
class PlanCreated:
    """An agent's plan, before it runs: its steps, the planner's text, and whether the
    first plan failed validation and this one is the planner's repair."""

    steps: list[dict[str, Any]]
    raw: str
    repaired: bool = False


Event = (
    AnswerDelta
    | AnswerRevised
    | CitationsFound
    | StepStarted
    | StepFinished
    | LLMCallFinished
    | PlanCreated
)


@dataclass
class AnswerCollector:
    """Folds a stream of events into the answer record that ``ask --json`` prints."""

    mode: str
    answer: str = ""
    citations: list[Citation] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    llm_usages: list[Usage] = field(default_factory=list)

    def add(self, event: Event) -> None:
        """Take one event into the record."""
        if isinstance(event, AnswerDelta):
            self.answer += event.text
        elif isinstance(event, AnswerRevised):
            self.answer = event.text
        elif isinstance(event, CitationsFound):
            self.citations = list(event.citations)
        elif isinstance(event, StepStarted):
            self.steps.append({"step": event.name, "event": "started", "input": event.input})
        elif isinstance(event, StepFinished):
            step: dict[str, Any] = {
                "step": event.name,
                "event": "finished",
                "seconds": round(event.seconds, 4),
            }
            if event.error is not None:
                step["error"] = event.error
            else:
                step["output"] = event.output
            self.steps.append(step)
        elif isinstance(event, PlanCreated):
            self.steps.append(
                {
                    "step": "plan",
                    "event": "plan",
                    "plan": event.steps,
                    "raw": event.raw,
                    "repaired": event.repaired,
                }
            )
        elif isinstance(event, LLMCallFinished):
            self.llm_usages.append(event.usage)
            self.steps.append(
                {"step": f"llm:{event.purpose}", "event": "usage", **asdict(event.usage)}
            )

    def extend(self, events: Iterable[Event]) -> AnswerCollector:
        """Take every event of a stream; returns ``self`` for chaining."""
        for event in events:
            self.add(event)
        return self

    def to_dict(self, seconds: float) -> dict[str, Any]:
        """The JSON shape of an answer; ``seconds`` is the wall time of the whole question."""
        total = Usage.total(self.llm_usages)
        return {
            "answer": self.answer.strip(),
            "mode": self.mode,
            "citations": [asdict(c) for c in self.citations],
            "steps": self.steps,
            "usage": {
                "prompt_tokens": total.prompt_tokens,
                "prompt_tokens_evaluated": total.prompt_tokens_evaluated,
                "completion_tokens": total.completion_tokens,
                "llm_calls": len(self.llm_usages),
                "seconds": round(seconds, 3),
            },
        }
