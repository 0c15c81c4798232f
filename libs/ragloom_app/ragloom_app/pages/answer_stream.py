"""What an answer shows of its mode's events: bounded in time, checked, scrubbed, and
ended in words when the mode fails (:func:`bounded_events`, used by the chat page)."""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace

from ragloom.event_checks import event_problem
from ragloom.events import AnswerCollector, AnswerDelta, Event, LLMCallFinished, StepFinished
from ragloom.llms.base import LLMBusyError
from ragloom.llms.deadline import UnfinishedCalls
from ragloom_app.errors import UserFacingError, scrub, user_error

__all__ = ["LeftOut", "MalformedEventError", "bounded_events"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeftOut:
    """An index left out of one answer: its name and why, in words with a log reference."""

    index: str
    message: str


class MalformedEventError(UserFacingError, TypeError):
    """A reasoning mode (a plugin's) yielded an event of the wrong type or shape: the
    answer ends there, saying which field (:func:`ragloom.event_checks.event_problem`)."""


def bounded_events(
    stream: Iterator[Event],
    collector: AnswerCollector,
    left_out: list[LeftOut],
    started: float,
    limit: float,
    unfinished: UnfinishedCalls | None = None,
) -> Generator[Event, None, None]:
    """A mode's ``stream`` of events as an answer may show them: the indices left out
    noted (``left_out`` grows as the search meets them), step errors scrubbed, stopped
    ``limit`` seconds after ``started`` (a ``perf_counter`` time), and a failure of the
    mode ending the answer in words. ``collector`` is what the answer has so far. The
    calls the mode's LLMs left unfinished (in ``unfinished``), once its stream is closed,
    count as ``llm:cut-short`` calls."""
    reported = 0
    try:
        for event in stream:
            if (problem := event_problem(event)) is not None:
                raise MalformedEventError(
                    f"the reasoning mode sent an event Ragloom cannot use ({problem}); "
                    "its plugin needs mending"
                )
            while reported < len(left_out):
                yield _left_out_step(left_out[reported])
                reported += 1
            yield _scrubbed(event)
            if time.perf_counter() - started > limit:
                yield from _cut_short(collector, limit, started)
                break
    except LLMBusyError as exc:
        # Expected under load, not a fault: said in words, logged without a stack trace.
        logger.warning("answer not written: %s", exc)
        yield from _ended_early(collector, started, "busy", scrub(str(exc)))
    except Exception as exc:
        failure = user_error(exc, "Answering", log=logger)
        yield StepFinished("error", time.perf_counter() - started, error=failure.message)
        yield AnswerDelta(failure.ending(collector.answer))  # what was written is kept
    finally:
        _close(stream)
    for item in left_out[reported:]:
        yield _left_out_step(item)
    for usage in unfinished.take() if unfinished is not None else ():
        yield LLMCallFinished("cut-short", usage)


def _cut_short(collector: AnswerCollector, limit: float, started: float) -> Iterator[Event]:
    """The events that end an answer at its deadline, keeping what it had."""
    logger.warning("answer stopped at its deadline of %s s (ANSWER_DEADLINE_SECONDS)", limit)
    words = f"the answer took longer than the limit of {limit:g} s (ANSWER_DEADLINE_SECONDS)"
    yield from _ended_early(collector, started, "deadline", words)


def _ended_early(
    collector: AnswerCollector, started: float, step: str, words: str
) -> Iterator[Event]:
    """The events that end an answer early because of ``words``, keeping what it had;
    ``step`` names the page's own step that says so."""
    yield StepFinished(step, time.perf_counter() - started, error=f"Stopped: {words}.")
    if collector.answer.strip():
        yield AnswerDelta(f"\n\n(Cut short: {words}.)")
    else:
        yield AnswerDelta(f"Sorry, I could not answer: {words}.")


def _close(stream: Iterator[Event]) -> None:
    """Close a mode's stream: stops its LLM's generation and the rest of its work."""
    close = getattr(stream, "close", None)
    if close is None:
        return
    try:
        close()
    except Exception:
        logger.exception("the mode's stream failed while closing")


def _left_out_step(item: LeftOut) -> StepFinished:
    """A step that tells the answer went on without an index."""
    return StepFinished(f"index:{item.index}", 0.0, error=f"Left out: {item.message}")


def _scrubbed(event: Event) -> Event:
    """``event`` with a step's error scrubbed of paths and URLs (a tool's message may
    hold them); the whole error goes to the log."""
    if not isinstance(event, StepFinished) or not event.error:
        return event
    shown = scrub(event.error)
    if shown != event.error:
        logger.info("step %s failed: %s", event.name, event.error)
    return replace(event, error=shown)
