"""``OpenAIChat`` on ``server_kind="auto"`` against an endpoint whose /models does not work:
it is taken for a server of no known kind, sent nothing server-specific, and asked once.

Against the labelled stand-in endpoint on loopback (``ragloom_app.testing.openai_standin``),
whose /models answers the status under test; these are tests of the client's control flow.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from ragloom.llms import openai_compat
from ragloom.llms.base import ChatMessage
from ragloom.llms.openai_compat import OpenAIChat
from ragloom_app.testing.openai_standin import FakeEndpoint, fake_openai

QUESTION = [ChatMessage("user", "Say something.")]


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with fake_openai() as served:
        yield served


@pytest.mark.parametrize("status", [404, 401, 403])
def test_an_endpoint_without_a_model_list_answers_and_is_asked_once(
    endpoint: FakeEndpoint, status: int
) -> None:
    endpoint.models_status = status
    chat = OpenAIChat(base_url=endpoint.url, model="fake", max_retries=0)

    for _ in range(2):
        assert chat.run(QUESTION).text.strip() == endpoint.reply
        # Of no known kind: no llama.cpp extension (repeat_penalty) goes with the request.
        assert "repeat_penalty" not in endpoint.last_body
    assert endpoint.model_listings == 1
    assert endpoint.requests == 2
    assert not chat.supports_grammar and not chat.continues_assistant_turn
    assert endpoint.model_listings == 1


def test_requests_at_once_wait_for_one_probe(endpoint: FakeEndpoint) -> None:
    endpoint.delay = 0.2
    chat = OpenAIChat(base_url=endpoint.url, model="fake", max_retries=0)
    answers: list[str] = []
    threads = [
        threading.Thread(target=lambda: answers.append(chat.run(QUESTION).text)) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(answers) == 4
    assert endpoint.model_listings == 1


def test_a_failed_probe_is_tried_again_once_its_time_is_up(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_compat, "DETECT_RETRY_SECONDS", 0.5)
    chat = OpenAIChat(base_url=endpoint.url, model="fake", max_retries=0)
    chat.run(QUESTION)
    time.sleep(0.6)
    endpoint.models_status = 200  # the server learnt to list its models meanwhile
    chat.run(QUESTION)
    chat.run(QUESTION)

    # Asked after the failure's time was up, then never again: an answer is kept.
    assert endpoint.model_listings == 2


def test_a_server_still_starting_is_asked_again_soon(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 503 (a llama.cpp server loading its model) is no answer about the route: the kind
    is asked again after seconds, not minutes, so its grammars (reranking) come back."""
    monkeypatch.setattr(openai_compat, "DETECT_RETRY_TRANSIENT_SECONDS", 0.3)
    endpoint.models_status = 503
    chat = OpenAIChat(base_url=endpoint.url, model="fake", max_retries=0)
    chat.run(QUESTION)
    assert endpoint.model_listings == 1
    time.sleep(0.4)
    chat.run(QUESTION)  # still starting: asked again, and now after twice as long
    assert endpoint.model_listings == 2
    time.sleep(0.4)
    chat.run(QUESTION)
    assert endpoint.model_listings == 2
    time.sleep(0.3)
    endpoint.models_status = 200
    chat.run(QUESTION)
    chat.run(QUESTION)
    assert endpoint.model_listings == 3
