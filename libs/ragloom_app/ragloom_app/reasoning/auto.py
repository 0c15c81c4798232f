"""Auto mode: give each question to the mode that can answer it, and try once more when
the answer does not pass the grounding check.

The question's wording decides the first mode (:func:`ragloom.qa.routing.classify_question`:
one fact, arithmetic on documented numbers, or several facts to find), each kind to the
mode its setting names. When that mode's answer fails the grounding check (declined: what
it claims is in no cited passage, or it cites nothing) or the mode fails, the question goes
once to the
escalation mode, if what it is expected to cost (:class:`ModeCosts`) fits what is left of
the question's token budget; the better grounded of the two answers stands. A partly
supported answer (its unsupported sentences marked) passes, unless the setting
``escalate_partly`` says to try again on it too. A question
the check before answering declined (the documents do not mention what it names) is not
tried again: no mode can find what the indices lack.

The trace says which mode answered and why: a ``route`` step, and an ``escalate`` step
when there is a second try, each with a :class:`~ragloom.events.ModeChoice`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from theflow import Param

from ragloom.events import (
    AnswerCollector,
    AnswerDelta,
    AnswerRecord,
    AnswerRevised,
    CitationsFound,
    Event,
    GroundingChecked,
    ModeChoice,
    StepFinished,
    StepStarted,
)
from ragloom.llms.base import LLMBusyError
from ragloom.qa.routing import QuestionKind, classify_question
from ragloom.retrieval import Retriever
from ragloom_app.errors import UserError, user_error
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState, SettingSpec
from ragloom_app.reasoning.mode_costs import ModeCosts
from ragloom_app.reasoning.settings import count_setting, grounding_setting, precheck_setting

__all__ = ["AUTO_MODE_ID", "AutoReasoning", "ModeAttempt", "shared_mode_costs"]

logger = logging.getLogger(__name__)

AUTO_MODE_ID = "auto"
BUILTIN_TARGETS = ("fullqa", "decompose", "react", "rewoo")
ROUTE_LABEL = "Choosing a mode"
ESCALATE_LABEL = "Trying another mode"

shared_mode_costs = ModeCosts()
"""The costs every ``auto`` request of this process learns from and estimates with."""

PipelineFactory = Callable[[str, Mapping[str, Any]], BaseReasoning]
"""Builds the pipeline of the mode with this id, with these settings, for this request."""


def _mode_setting(label: str, default: str, info: str) -> SettingSpec:
    return {
        "name": label,
        "value": default,
        "component": "dropdown",
        "choices": list(BUILTIN_TARGETS),
        "info": info,
    }


@dataclass(frozen=True)
class ModeAttempt:
    """One mode's try at the question: its record, how it failed if it raised, and
    whether the check before answering declined it (then nothing would do better)."""

    mode: str
    record: AnswerRecord
    failure: UserError | None = None

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens of the attempt's LLM calls."""
        return self.record.usage.prompt_tokens + self.record.usage.completion_tokens

    @property
    def declined_before_answering(self) -> bool:
        """The documents lack what the question names: the check said so, no model ran."""
        return self.record.precheck is not None and self.record.precheck.declined

    @property
    def failed(self) -> bool:
        """The mode raised or a step of it failed for good (an ``error`` step)."""
        return any(getattr(step, "name", "") == "error" for step in self.record.steps)

    @property
    def standing(self) -> int:
        """How well the answer stands: 3 supported, 2 partly, 1 unsupported or citing
        nothing, 0 a decline, a failure or no answer; -1 when it was not checked."""
        report = self.record.grounding
        if self.failed or not self.record.answer:
            return 0
        if report is None:
            return -1
        if report.declined:
            return 0
        return {"supported": 3, "partly": 2}.get(report.status, 1)

    def why_not(self) -> str:
        """Why the answer did not pass, in words, for the trace."""
        report = self.record.grounding
        if self.failed:
            return "it failed"
        if not self.record.answer:
            return "it gave no answer"
        if report is None:
            return "it was not checked"
        if report.declined:
            return "its answer was declined by the grounding check"
        missing = report.unsupported_specifics()
        if missing:
            return "its answer states what no cited passage holds: " + ", ".join(missing[:5])
        return "its answer cites no passage" if report.status == "no_citations" else "unchecked"


class AutoReasoning(BaseReasoning):
    """Routes each question to a mode by its wording; escalates once when its answer
    does not pass the grounding check."""

    build_mode: PipelineFactory = Param(help="Builds a mode's pipeline for this request.")
    routes: dict[str, str] = Param(help="The mode id for each question kind.")
    escalation_mode: str = Param("rewoo", help="The mode of the second try.")
    fallback_mode: str = Param("fullqa", help="The second try's mode when the first was it.")
    token_budget: int = Param(1500, help="Most tokens a question may be expected to spend.")
    escalate_partly: bool = Param(False, help="Try again on a partly supported answer too.")
    precheck: bool = Param(True, help="Run the check before answering (in the first mode).")
    costs: ModeCosts = Param(
        default_callback=lambda _: shared_mode_costs, help="Expected cost of each mode."
    )

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(
            id=AUTO_MODE_ID,
            name="Auto",
            description="Choose the mode for each question by its wording (arithmetic "
            "to ReWOO with the calculator; which mode takes one fact or several facts is a "
            "setting) and try once more when the answer is not grounded in its sources.",
        )

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        return {
            "single_mode": _mode_setting(
                "Mode for one fact", "fullqa", "Questions about one thing in one place."
            ),
            "arithmetic_mode": _mode_setting(
                "Mode for arithmetic",
                "rewoo",
                "Questions whose answer is computed from documented numbers.",
            ),
            # Measured (docs/performance.md): with the bundled 0.5B model neither
            # decomposition nor ReWOO answers more two-page questions than FullQA (1, 0
            # and 1 of 10), at 3.0x and 2.2x its tokens; with a larger model, try them.
            "comparison_mode": _mode_setting(
                "Mode for several facts",
                "fullqa",
                "Questions about two things, or a fact to find before the one asked for "
                "(decomposition or ReWOO may do better with a larger model).",
            ),
            "escalation_mode": _mode_setting(
                "Mode to try again with",
                "rewoo",
                "When an answer does not pass the grounding check (the mode for one fact "
                "tries again when this mode gave that answer).",
            ),
            "token_budget": count_setting(
                "Token budget per question",
                1500,
                0,
                100_000,
                "A second try starts only if the tokens spent plus what that mode is "
                "expected to cost stay within this (0: never try again).",
            ),
            # Measured (docs/performance.md): on the documentation set the one partly
            # supported answer tried again cost 815 tokens and stayed wrong.
            "escalate_partly": {
                "name": "Try again on partly supported answers",
                "value": False,
                "component": "checkbox",
                "info": "Also try again when only some sentences of the answer are supported "
                "(they are marked as such): more tokens, a fully supported answer sometimes.",
            },
            "precheck": precheck_setting(),
            "check_grounding": grounding_setting(),
        }

    @classmethod
    def get_pipeline(
        cls,
        settings: Mapping[str, Any],
        state: ReasoningState,
        retrievers: Sequence[Retriever],
    ) -> AutoReasoning:
        values = cls.resolve_settings(settings)
        lookup = state.reasoning_named
        if lookup is None:
            raise ValueError("the auto mode needs the app's modes (ReasoningState.reasoning_named)")
        chosen = {
            "single": values["single_mode"],
            "arithmetic": values["arithmetic_mode"],
            "comparison": values["comparison_mode"],
            "escalation": values["escalation_mode"],
        }
        for role, mode in chosen.items():
            if mode == AUTO_MODE_ID:
                raise ValueError(f"the auto mode cannot hand {role} questions to itself")
            lookup(mode)  # a KeyError names the registered modes
        check_grounding = state.grounding_for(values)

        def build_mode(mode: str, overrides: Mapping[str, Any]) -> BaseReasoning:
            target = lookup(mode)
            given = {"check_grounding": check_grounding, **overrides}
            return target.get_pipeline(target.resolve_settings(given), state, retrievers)

        return cls(
            build_mode=build_mode,
            routes={kind: chosen[kind] for kind in ("single", "arithmetic", "comparison")},
            escalation_mode=chosen["escalation"],
            fallback_mode=chosen["single"],
            token_budget=int(values["token_budget"]),
            escalate_partly=bool(values["escalate_partly"]),
            precheck=bool(values["precheck"]) and state.find_terms is not None,
        )

    def stream(self, question: str) -> Iterator[Event]:
        route = classify_question(question)
        kind: QuestionKind = route.kind
        first_mode = self.routes[kind]
        yield from _choice_step(
            "route", ROUTE_LABEL, ModeChoice(mode=first_mode, reason=route.reason, kind=kind)
        )
        first = yield from self._attempt(first_mode, question, {"precheck": self.precheck})
        second_mode = self._second_mode(first)
        if second_mode is None:
            yield from _release(first)
            return
        expected = self.costs.expected(second_mode)
        reason = (
            f"{first_mode} did not pass: {first.why_not()}; {second_mode} is expected to cost "
            f"{expected} tokens, {self.token_budget - first.tokens} of the budget are left"
        )
        yield from _choice_step(
            "escalate",
            ESCALATE_LABEL,
            ModeChoice(
                mode=second_mode,
                reason=reason,
                kind=kind,
                escalated_from=first_mode,
                tokens_spent=first.tokens,
            ),
        )
        yield AnswerRevised("")
        # The first try passed the check before answering: the second need not repeat it.
        second = yield from self._attempt(second_mode, question, {"precheck": False})
        if second.standing > first.standing:
            yield from _release(second)
            return
        label = f"Keeping the {first_mode} answer"
        yield StepStarted("keep", {"mode": first_mode}, label=label)
        yield StepFinished("keep", 0.0, output={"mode": first_mode}, label=label)
        yield AnswerRevised(first.record.answer)
        yield from _release(first)

    def _second_mode(self, first: ModeAttempt) -> str | None:
        """The mode to try again with, or None: the first answer passed (or was not
        checked, or the documents lack what the question names), there is no other mode,
        or it would not fit the token budget."""
        if first.declined_before_answering or first.standing in (-1, 3):
            return None
        if first.standing == 2 and not self.escalate_partly:
            return None
        second = self.escalation_mode if first.mode != self.escalation_mode else self.fallback_mode
        if second == first.mode:
            return None
        if first.tokens + self.costs.expected(second) > self.token_budget:
            return None
        return second

    def _attempt(
        self, mode: str, question: str, overrides: Mapping[str, Any]
    ) -> Generator[Event, None, ModeAttempt]:
        """Run ``mode`` on ``question``, forwarding its events but its citations and
        grounding report (:func:`_release` gives the chosen answer's, once); returns the
        attempt. A mode that raises, while being built (e.g. a tool it cannot set up) or
        while answering, is a failed attempt (an ``error`` step), so that the other answer
        can still stand."""
        collector = AnswerCollector(mode)
        started = time.perf_counter()
        failure: UserError | None = None
        stream: Iterator[Event] | None = None
        try:
            stream = self.build_mode(mode, overrides).stream(question)
            for event in stream:
                collector.add(event)
                if not isinstance(event, CitationsFound | GroundingChecked):
                    yield event
        except LLMBusyError:
            raise  # busy until the answer's deadline: another mode would wait in vain
        except Exception as exc:
            failure = user_error(exc, f"Answering in the {mode} mode", log=logger)
            failed = StepFinished("error", time.perf_counter() - started, error=failure.message)
            collector.add(failed)
            yield failed
        finally:
            close = getattr(stream, "close", None)
            if close is not None:  # a generator cut short (the deadline) ends now
                close()
        attempt = ModeAttempt(mode, collector.record(time.perf_counter() - started), failure)
        if attempt.tokens > 0:
            self.costs.record(mode, attempt.tokens)
        return attempt


def _choice_step(name: str, label: str, choice: ModeChoice) -> Iterator[Event]:
    yield StepStarted(name, {"mode": choice.mode}, label=label)
    yield StepFinished(name, 0.0, output=choice, label=label)


def _release(attempt: ModeAttempt) -> Iterator[Event]:
    """The citations and grounding report of the answer that stands, held back till now;
    an answer whose mode raised ends saying so, as the chat page ends one (what was
    written is kept, then the failure in brackets; nothing written: an apology), so that
    a broken-off or empty answer is not shown as if it were whole."""
    record = attempt.record
    if attempt.failure is not None:
        yield AnswerDelta(attempt.failure.ending(record.answer))
    yield CitationsFound(list(record.citations))
    if record.grounding is not None:
        yield GroundingChecked(record.grounding)
