"""How ``OpenAIChat`` treats an endpoint that is slow, failing or busy: a timeout, retries
for the errors that say "try again" (only those), and a bound on requests at once.

Against a labelled stand-in endpoint on loopback that streams fixed text
(``ragloom_app.testing.openai_standin``): these are tests of the client's control flow; the
answers of a real model through a real server are tested in ``test_openai_chat.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from ragloom.llms.base import ChatMessage, GenerationOptions, LLMBusyError, LLMError
from ragloom.llms.openai_compat import OpenAIChat
from ragloom_app.testing.openai_standin import FakeEndpoint, fake_openai

QUESTION = [ChatMessage("user", "Say something.")]


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with fake_openai() as served:
        yield served


def _chat(endpoint: FakeEndpoint, **settings: object) -> OpenAIChat:
    return OpenAIChat(base_url=endpoint.url, model="fake", server_kind="openai", **settings)


def test_a_transient_failure_is_retried_and_the_answer_arrives(endpoint: FakeEndpoint) -> None:
    endpoint.failures, endpoint.failure_status = 2, 503
    result = _chat(endpoint, max_retries=2).run(QUESTION)
    assert result.text.strip() == endpoint.reply and endpoint.requests == 3


@pytest.mark.parametrize("status", [429, 500, 502])
def test_every_try_again_answer_is_retried(endpoint: FakeEndpoint, status: int) -> None:
    endpoint.failures, endpoint.failure_status = 1, status
    assert _chat(endpoint).run(QUESTION).text.strip() == endpoint.reply
    assert endpoint.requests == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_an_answer_that_will_not_change_is_not_retried(endpoint: FakeEndpoint, status: int) -> None:
    endpoint.failures, endpoint.failure_status = 5, status
    with pytest.raises(LLMError, match=f"answered HTTP {status}") as caught:
        _chat(endpoint, max_retries=3).run(QUESTION)
    assert endpoint.requests == 1
    assert not caught.value.transient  # nor worth a retry by the caller (the llm tool)


def test_retries_end_and_say_what_the_endpoint_answered(endpoint: FakeEndpoint) -> None:
    endpoint.failures, endpoint.failure_status = 10, 503
    with pytest.raises(LLMError, match="answered HTTP 503") as caught:
        _chat(endpoint, max_retries=1).run(QUESTION)
    assert endpoint.requests == 2
    assert caught.value.transient  # it may answer later


def test_a_slow_endpoint_fails_at_its_timeout(endpoint: FakeEndpoint) -> None:
    endpoint.delay = 5.0
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 0\.5 s") as caught:
        _chat(endpoint, timeout=0.5, max_retries=0).run(QUESTION)
    assert caught.value.transient
    assert time.monotonic() - started < 4  # not the endpoint's 5 s


def test_requests_beyond_the_bound_wait_their_turn(endpoint: FakeEndpoint) -> None:
    endpoint.delay = 0.3
    results: list[str] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:  # a model object per request, as the app makes them: the bound is the endpoint's
            results.append(_chat(endpoint, max_concurrent=2).run(QUESTION).text)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == [] and len(results) == 6
    assert endpoint.most_at_once == 2


def test_a_request_that_waits_past_the_timeout_says_the_endpoint_is_busy(
    endpoint: FakeEndpoint,
) -> None:
    endpoint.delay = 2.0
    first = _chat(endpoint, max_concurrent=1, timeout=10)
    holder = threading.Thread(target=lambda: first.run(QUESTION))
    holder.start()
    time.sleep(0.3)  # the first request holds the only slot
    with pytest.raises(LLMError, match="busy with the requests this server sent it"):
        _chat(endpoint, max_concurrent=1, timeout=0.5).run(QUESTION)
    holder.join(timeout=10)
    assert endpoint.requests == 1


def test_a_request_stops_waiting_for_a_slot_at_its_wait_until(endpoint: FakeEndpoint) -> None:
    endpoint.delay = 2.0
    first = _chat(endpoint, max_concurrent=1, timeout=10)
    holder = threading.Thread(target=lambda: first.run(QUESTION))
    holder.start()
    time.sleep(0.3)  # the first request holds the only slot
    started = time.monotonic()
    soon = GenerationOptions(wait_until=started + 0.4)
    with pytest.raises(LLMBusyError, match=r"none ended within 0\.\d+ s \(the answer's deadline"):
        _chat(endpoint, max_concurrent=1, timeout=10).run(QUESTION, soon)
    assert time.monotonic() - started < 1.5  # not the request's own 10 s
    holder.join(timeout=10)
    assert endpoint.requests == 1
