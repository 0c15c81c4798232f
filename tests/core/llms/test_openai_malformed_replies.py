"""``OpenAIChat`` against an endpoint that answers in shapes it cannot read: an
:class:`LLMError` in words, never a bare ``TypeError`` or ``AttributeError``.

Against the labelled stand-in endpoint on loopback (``ragloom_app.testing.openai_standin``)
sending the malformed JSON under test over real HTTP, through the ``openai`` package.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragloom.llms.base import ChatMessage, GenerationOptions, LLMError, ToolSpec
from ragloom.llms.openai_compat import OpenAIChat
from ragloom_app.testing.openai_standin import FakeEndpoint, fake_openai

QUESTION = [ChatMessage("user", "Say something.")]
UNREADABLE = "the endpoint answered in a shape Ragloom cannot read"
TOOLS = GenerationOptions(tools=(ToolSpec("docsearch", "Search.", {"type": "object"}),))


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with fake_openai() as served:
        yield served


def _chat(endpoint: FakeEndpoint) -> OpenAIChat:
    return OpenAIChat(
        base_url=endpoint.url, model="fake", server_kind="openai", native_tools=True, max_retries=0
    )


def _piece(choices: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion.chunk", "model": "fake", "choices": choices}


FINISHED = _piece([{"index": 0, "delta": {}, "finish_reason": "stop"}])


@pytest.mark.parametrize(
    ("chunks", "said"),
    [
        ([{"id": "x", "object": "chat.completion.chunk"}, FINISHED], "no list of choices"),
        ([_piece(None), FINISHED], "no list of choices"),
        ([_piece("stop"), FINISHED], "no list of choices"),
        ([_piece(["Hello"]), FINISHED], "a choice is a bare value"),
        ([_piece([{"index": 0, "delta": {"content": ["Hi"]}}]), FINISHED], "other than text"),
    ],
)
def test_a_streamed_piece_of_another_shape_is_said_in_words(
    endpoint: FakeEndpoint, chunks: list[Any], said: str
) -> None:
    endpoint.raw_chunks = chunks
    with pytest.raises(LLMError, match=f"{UNREADABLE}: .*{said}"):
        _chat(endpoint).run(QUESTION)


def test_a_usage_report_without_choices_is_read(endpoint: FakeEndpoint) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    hello = _piece([{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}])
    endpoint.raw_chunks = [hello, FINISHED, {"id": "x", "choices": None, "usage": usage}]
    result = _chat(endpoint).run(QUESTION)
    assert result.text == "Hello" and result.usage.prompt_tokens == 5


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"id": "x", "choices": []}, "the reply holds no choices"),
        ({"id": "x"}, "the reply holds no choices"),
        ({"id": "x", "choices": [{"index": 0, "message": None}]}, "its choice holds no message"),
        (
            {"error": {"message": "model overloaded", "type": "server_error"}},
            "it sent an error instead: model overloaded",
        ),
        (
            {"choices": [{"message": {"tool_calls": [{"id": "c", "function": None}]}}]},
            "tool call 1 names no function",
        ),
        ({"choices": ["a string"]}, "its choice holds no message"),
    ],
)
def test_a_whole_reply_of_another_shape_is_said_in_words(
    endpoint: FakeEndpoint, body: Any, said: str
) -> None:
    endpoint.raw_body = body
    with pytest.raises(LLMError, match=f"{UNREADABLE}: {said}"):
        _chat(endpoint).run(QUESTION, TOOLS)


def test_usage_reported_in_another_shape_is_estimated(endpoint: FakeEndpoint) -> None:
    message = {"role": "assistant", "content": "Fine."}
    endpoint.raw_body = {
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": "many", "completion_tokens": None},
    }
    result = _chat(endpoint).run(QUESTION, TOOLS)
    assert result.text == "Fine." and result.usage.prompt_tokens > 0
