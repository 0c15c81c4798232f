"""``DeadlineLLM``: every call of one answer stops waiting for its turn at the answer's
deadline, and is otherwise the wrapped model's (control flow, with the replay LLM; the
waits themselves are tested with the real model and endpoint, in test_llamacpp_chat.py
and test_openai_endpoint_limits.py)."""

from __future__ import annotations

import time

import pytest
from theflow import Param

from ragloom.llms.base import ChatMessage, GenerationOptions, LLMError
from ragloom.llms.deadline import DeadlineLLM, UnfinishedCalls
from ragloom.llms.replay import ReplayLLM
from tests.helpers.misbehaving_llms import FailingLLM

QUESTION = [ChatMessage("user", "How hot is the reactor?")]


def test_each_call_waits_for_its_turn_until_the_deadline_at_most() -> None:
    model = ReplayLLM(replies=["451 K [1]."])
    deadline = time.monotonic() + 30
    bound = DeadlineLLM(llm=model, deadline=deadline)
    assert bound.run(QUESTION).text == "451 K [1]."
    bound.run(QUESTION, GenerationOptions(max_tokens=9, wait_until=deadline + 60))
    sooner = deadline - 10
    bound.run(QUESTION, GenerationOptions(wait_until=sooner))  # a sooner limit stays
    assert [options.wait_until for options in model.options_seen if options] == [
        deadline,
        deadline,
        sooner,
    ]
    assert model.options_seen[1] is not None and model.options_seen[1].max_tokens == 9


def test_everything_else_is_the_wrapped_models() -> None:
    model = ReplayLLM(window=2048, grammar=True, native=True, structured=True, prefill=False)
    bound = DeadlineLLM(llm=model, deadline=time.monotonic() + 30)
    assert (bound.name, bound.context_window) == ("ReplayLLM", 2048)
    assert (bound.supports_grammar, bound.supports_json_schema) == (True, True)
    assert (bound.supports_tool_calls, bound.continues_assistant_turn) == (True, False)
    assert bound.count_tokens("three words here") == 3
    assert bound.in_line == 0  # the replay LLM has no line


class ModelOfAPlugin(ReplayLLM):
    """A plugin's LLM, with a setting and a property of its own."""

    temperature: float = Param(0.3, help="A setting of its own.")

    @property
    def supports_images(self) -> bool:
        return True


def test_a_plugin_models_own_attributes_are_read_through() -> None:
    """Every answer's LLM is wrapped: a mode reading its model's own setting once met an
    AttributeError."""
    bound = DeadlineLLM(llm=ModelOfAPlugin(), deadline=time.monotonic() + 30)
    assert bound.temperature == 0.3 and bound.supports_images is True
    with pytest.raises(AttributeError):
        _ = bound.no_such_attribute


def test_a_call_cut_short_is_counted_with_an_estimate_and_a_finished_one_is_not() -> None:
    """The usage of a call comes with its last item; one closed before it (the answer's
    deadline, a client that left) after some words still took tokens."""
    unfinished = UnfinishedCalls()
    bound = DeadlineLLM(
        llm=ReplayLLM(replies=["It runs at 451 kelvin [1]."]),
        deadline=time.monotonic() + 30,
        unfinished=unfinished,
    )
    assert bound.run(QUESTION).usage.completion_tokens == 6
    assert unfinished.take() == []  # finished: its own usage counts, not an estimate
    cut = bound.stream(QUESTION)
    assert [next(cut).text, next(cut).text] == ["It", " runs"]
    cut.close()
    never_began = bound.stream(QUESTION)
    never_began.close()  # no word came: it may never have had its turn
    (estimate,) = unfinished.take()
    assert (estimate.prompt_tokens, estimate.completion_tokens) == (
        ReplayLLM().count_tokens(QUESTION[0].content),
        2,
    )
    assert estimate.first_token_seconds is not None and unfinished.take() == []

    failing = DeadlineLLM(
        llm=FailingLLM(replies=["It runs at 451 kelvin."], words_first=3, message="gone"),
        deadline=time.monotonic() + 30,
        unfinished=unfinished,
    )
    with pytest.raises(LLMError, match="gone"):
        failing.run(QUESTION)
    # Its caller sees the failure and counts it if it will (FullQA's answer step does):
    # counted here too, it would be counted twice.
    assert unfinished.take() == []
