"""The OpenAI-compatible endpoint, /v1, used through the official ``openai`` client against
a live server: models, answers with and without streaming, usage, and the citations in
the documented extra field."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from ragloom_app.api.openai_routes import REVISED_NOTICE
from tests.helpers.api_server import ANSWER, LiveServer, live_server
from tests.helpers.web_surface import LOOPBACK, outbound

__all__ = ["live_server", "outbound"]


@pytest.fixture
def client(live_server: LiveServer) -> openai.OpenAI:
    # No login yet on loopback: any key is taken (accounts will check it).
    return openai.OpenAI(base_url=f"{live_server.url}v1", api_key="sk-local", max_retries=0)


def test_every_reasoning_mode_is_a_model(client: openai.OpenAI) -> None:
    ids = [model.id for model in client.models.list()]
    assert {"ragloom-fullqa", "ragloom-decompose", "ragloom-react", "ragloom-rewoo"} <= set(ids)
    assert "ragloom-auto" in ids


def test_a_model_is_retrieved_by_its_id(client: openai.OpenAI) -> None:
    model = client.models.retrieve("ragloom-fullqa")
    assert (model.id, model.object, model.owned_by) == ("ragloom-fullqa", "model", "ragloom")
    with pytest.raises(openai.NotFoundError) as unknown:
        client.models.retrieve("gpt-4o")
    assert (unknown.value.code, unknown.value.type, unknown.value.param) == (
        "model_not_found",
        "not_found_error",
        "model",
    )
    assert "ragloom-fullqa" in str(unknown.value)  # the models there are


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("GET", "v1/chat/completions", "POST"), ("DELETE", "v1/models", "GET")],
)
def test_a_route_asked_with_a_method_it_does_not_take_is_a_405(
    live_server: LiveServer, method: str, path: str, allowed: str
) -> None:
    refused = httpx.request(method, f"{live_server.url}{path}", timeout=30)
    assert refused.status_code == 405 and refused.headers["Allow"] == allowed
    assert refused.json()["error"]["code"] == "method_not_allowed"
    missing = httpx.request(method, f"{live_server.url}v1/no/such/path", timeout=30)
    assert missing.status_code == 404  # a path that names nothing is still a 404


def test_a_completion_answers_with_usage_and_citations(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="ragloom-fullqa",
        messages=[{"role": "user", "content": "How hot is the reactor?"}],
        temperature=0.2,  # accepted, not used: the mode's settings decide
    )
    assert completion.choices[0].message.content == ANSWER
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    extra = completion.model_extra["ragloom"]  # type: ignore[index]
    citation = extra["citations"][0]
    assert (citation["number"], citation["source"]) == (1, "reactor.md")
    assert "451 kelvin" in citation["text"] and citation["end"] > citation["start"]
    assert extra["grounding"]["status"] == "supported"


def test_a_streamed_completion_arrives_in_pieces_and_ends_with_usage(
    client: openai.OpenAI,
) -> None:
    stream = client.chat.completions.create(
        model="ragloom-fullqa",
        messages=[{"role": "user", "content": [{"type": "text", "text": "How hot?"}]}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER
    assert REVISED_NOTICE not in text
    finished = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert len(finished) == 1
    assert finished[0].model_extra["ragloom"]["citations"][0]["source"] == "reactor.md"  # type: ignore[index]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_the_last_user_message_is_the_question(
    client: openai.OpenAI, live_server: LiveServer
) -> None:
    # The earlier turns are the request's history (ReasoningState.history); the built-in
    # modes answer the question alone, so they do not reach the prompt.
    llm = live_server.app.llm("replay")
    seen = len(llm.prompts)
    client.chat.completions.create(
        model="ragloom-fullqa",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Tell me about the canteen."},
            {"role": "assistant", "content": "It opens at eight."},
            {"role": "user", "content": "And the reactor?"},
        ],
    )
    prompt = llm.prompts[seen][-1].content
    assert prompt.endswith("Question: And the reactor?\nAnswer:")
    # The system message is dropped (docs/api.md): the mode's own prompt decides.
    assert not any("Be brief." in m.content for m in llm.prompts[seen])


_ASK = {"model": "ragloom-fullqa", "messages": [{"role": "user", "content": "Hot?"}]}
_PARTS = [{"role": "user", "content": [{"type": "text", "text": "x" * 90_000}] * 2}]
_TEXT = {"type": "text", "text": "Hot?"}


def test_options_that_only_tune_the_generation_are_accepted(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="ragloom-fullqa",
        messages=[{"role": "user", "content": "How hot is the reactor?"}],
        n=1,
        temperature=0.2,
        max_tokens=50,
        response_format={"type": "text"},
        # What asks for what an answer is anyway: text, no tools, no log probabilities.
        tool_choice="none",
        modalities=["text"],
        top_logprobs=0,
    )
    assert answer.choices[0].message.content


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        (
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]},
            404,
            "model_not_found",
            "model",
        ),
        ({"model": "ragloom-fullqa", "messages": []}, 422, "invalid_request", "messages"),
        (
            {"model": "ragloom-fullqa", "messages": [{"role": "assistant", "content": "Hi"}]},
            422,
            "invalid_request",
            "messages",
        ),
        (
            {"model": "ragloom-fullqa", "messages": [{"role": "user", "content": "x" * 5000}]},
            422,
            "invalid_request",
            "messages[0].content",
        ),
        ({**_ASK, "messages": _ASK["messages"] * 201}, 422, "invalid_request", "messages"),
        # What asks for an answer of another shape is refused, not silently ignored.
        ({**_ASK, "n": 3}, 422, "invalid_request", "n"),
        (
            {**_ASK, "tools": [{"type": "function", "function": {"name": "f"}}]},
            422,
            "invalid_request",
            "tools",
        ),
        (
            {**_ASK, "response_format": {"type": "json_object"}},
            422,
            "invalid_request",
            "response_format.type",
        ),
        ({**_ASK, "logprobs": True}, 422, "invalid_request", "logprobs"),
        # The field at fault, never pydantic's name for a branch of its type.
        (
            {**_ASK, "messages": [{"role": "user", "content": "x" * 100_001}]},
            422,
            "invalid_request",
            "messages[0].content",
        ),
        (
            {
                **_ASK,
                "messages": [{"role": "user", "content": [_TEXT, _TEXT | {"text": "x" * 100_001}]}],
            },
            422,
            "invalid_request",
            "messages[0].content",
        ),
        (
            {**_ASK, "messages": [{"role": "user", "content": 5}]},
            422,
            "invalid_request",
            "messages[0].content",
        ),
        # The list form of a message's content is bounded as the string form is.
        (
            {**_ASK, "messages": [*_PARTS, {"role": "user", "content": "Hot?"}]},
            422,
            "invalid_request",
            "messages[0]",
        ),
    ],
)
def test_refusals_are_openai_style_errors(
    live_server: LiveServer, body: dict, status: int, code: str, param: str | None
) -> None:
    response = httpx.post(f"{live_server.url}v1/chat/completions", json=body, timeout=30)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    assert error["type"] == ("not_found_error" if status == 404 else "invalid_request_error")
    assert error["param"] == param


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"functions": [{"name": "f", "parameters": {"type": "object"}}]}, "functions"),
        ({"function_call": "auto"}, "function_call"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
        ({"modalities": ["text", "audio"]}, "modalities[1]"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"top_logprobs": 5}, "top_logprobs"),
    ],
)
def test_fields_asking_for_another_kind_of_answer_are_refused(
    client: openai.OpenAI, fields: dict[str, Any], param: str
) -> None:
    # Answered in plain text, they would leave a client waiting for what never comes.
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(
            model="ragloom-fullqa", messages=[{"role": "user", "content": "Hot?"}], **fields
        )
    assert (refused.value.code, refused.value.type, refused.value.param) == (
        "invalid_request",
        "invalid_request_error",
        param,
    )


def test_the_openai_client_raises_its_own_errors_on_a_refusal(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
    assert "ragloom-fullqa" in str(caught.value)
    # What the client reads of the body, as it reads OpenAI's own errors.
    assert (caught.value.code, caught.value.type, caught.value.param) == (
        "model_not_found",
        "not_found_error",
        "model",
    )
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(
            model="ragloom-fullqa", messages=[{"role": "user", "content": "Hi"}], n=2
        )
    assert (refused.value.code, refused.value.type, refused.value.param) == (
        "invalid_request",
        "invalid_request_error",
        "n",
    )


def test_langchain_chat_openai_uses_a_mode_as_a_model_and_nothing_leaves_the_machine(
    live_server: LiveServer, outbound: list[str]
) -> None:
    # A client nobody here wrote, as its users configure it for any compatible server.
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        model="ragloom-fullqa",
        base_url=f"{live_server.url}v1",
        api_key="sk-local",  # type: ignore[arg-type]
        max_retries=0,
        timeout=30,
    )
    reply = chat.invoke("How hot is the reactor?")
    assert reply.content == ANSWER
    assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] > 0
    streamed = "".join(str(chunk.content) for chunk in chat.stream("How hot is the reactor?"))
    assert streamed == ANSWER
    assert outbound and all(LOOPBACK.match(host) for host in outbound), outbound
