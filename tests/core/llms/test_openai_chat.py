"""OpenAIChat against a real llama-cpp-python server on loopback, and against a dead port."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from ragloom.llms import ChatMessage, GenerationOptions, LLMError, LLMResult, OpenAIChat
from ragloom.llms.base import CallTimer
from ragloom.llms.llamacpp import LlamaCppChat
from tests.helpers.json_server import serve_json

FRANCE = [
    ChatMessage("system", "You are a terse assistant."),
    ChatMessage("user", "What is the capital of France? Answer with one word."),
]
COUNT = [ChatMessage("user", "Count from 1 to 20, separated by commas.")]


@pytest.fixture
def chat(llama_server: str) -> OpenAIChat:
    return OpenAIChat(base_url=llama_server, model="bundled", max_retries=0)


@pytest.mark.llm
def test_replies(chat: OpenAIChat) -> None:
    result = chat.run(FRANCE, GenerationOptions(max_tokens=16))

    assert "Paris" in result.text
    assert result.finish_reason == "stop"


@pytest.mark.llm
def test_streams_pieces_then_a_result_with_usage(chat: OpenAIChat) -> None:
    items = list(chat.stream(COUNT, GenerationOptions(max_tokens=20)))

    *pieces, last = items
    assert len(pieces) >= 5 and all(item.text for item in pieces)
    assert isinstance(last.result, LLMResult)
    assert last.result.text == "".join(item.text for item in pieces)
    assert last.result.finish_reason == "length"
    usage = last.result.usage
    # llama-cpp-python's server sends no usage in a stream: counted from the pieces.
    assert usage.completion_tokens == 20
    assert usage.prompt_tokens > 5 and usage.prompt_tokens_evaluated == usage.prompt_tokens
    assert usage.first_token_seconds is not None and usage.first_token_seconds <= usage.seconds


@pytest.mark.llm
def test_stop_sequences(chat: OpenAIChat) -> None:
    result = chat.run(COUNT, GenerationOptions(max_tokens=80, stop=("7",)))

    assert "6" in result.text and "7" not in result.text


@pytest.mark.llm
def test_json_schema_response(chat: OpenAIChat) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    }
    messages = [ChatMessage("user", "Name a large city and its population, as JSON.")]
    result = chat.run(messages, GenerationOptions(max_tokens=60, json_schema=schema))

    data = json.loads(result.text)
    assert isinstance(data["city"], str) and isinstance(data["population"], int)
    assert chat.server_kind == "auto"  # detected as llama.cpp, so the schema went as json_object


@pytest.mark.llm
def test_grammar_goes_to_llama_cpp_servers(chat: OpenAIChat) -> None:
    messages = [ChatMessage("user", "Is water wet? Answer yes or no.")]
    result = chat.run(messages, GenerationOptions(max_tokens=8, grammar='root ::= "yes" | "no"'))

    assert result.text in {"yes", "no"}


@pytest.mark.llm
def test_endpoint_errors_carry_the_status(llama_server: str) -> None:
    # Sent the OpenAI way, a JSON schema is refused by llama-cpp-python's server.
    openai_style = OpenAIChat(
        base_url=llama_server, model="bundled", server_kind="openai", max_retries=0
    )
    with pytest.raises(LLMError, match=r"127\.0\.0\.1:\d+/v1/? answered HTTP 500"):
        openai_style.run(FRANCE, GenerationOptions(json_schema={"type": "object"}))


@pytest.mark.llm
def test_llama_cpp_python_servers_answer_an_open_assistant_turn_in_a_new_one(
    chat: OpenAIChat,
) -> None:
    # Why ReAct lays its steps out as turns here (ragloom.agents.react.transcript).
    assert not chat.continues_assistant_turn
    assert OpenAIChat(
        base_url=chat.base_url, model="m", assistant_prefill=True
    ).continues_assistant_turn


@pytest.mark.llm
def test_llama_cpp_python_servers_count_tokens_as_the_model_does(
    chat: OpenAIChat, llama_chat: LlamaCppChat
) -> None:
    # Evidence budgets depend on it; the 4-characters estimate said 20 for the first.
    texts = ["Based on State of the Union Address 2023: how many tokens? 1,234.56", "Zorblax"]
    for text in texts:
        assert chat.count_tokens(text) == llama_chat.count_tokens(text)


def test_a_server_that_cannot_tokenize_gets_the_estimate_without_asking_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    listing = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "me"}]}
    with serve_json("/v1/models", listing) as base_url:  # answers no POST /extras/tokenize
        chat = OpenAIChat(base_url=base_url, model="m", max_retries=0)
        assert chat.count_tokens("x" * 40) == 10
        assert chat.count_tokens("y" * 80) == 20
    assert [r.getMessage().split(" failed")[0] for r in caplog.records] == [
        f"{base_url.removesuffix('/v1')}/extras/tokenize"
    ]


@pytest.mark.parametrize(
    ("owned_by", "kind", "prefill"),
    [
        ("llamacpp", "llama-server", True),
        ("me", "llama-cpp-python", False),
        ("openai", "other", False),
    ],
)
def test_the_kind_of_server_comes_from_its_model_list(
    owned_by: str, kind: str, prefill: bool
) -> None:
    listing = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": owned_by}]}
    with serve_json("/v1/models", listing) as base_url:
        chat = OpenAIChat(base_url=base_url, model="m", max_retries=0)
        assert chat._server() == kind
        assert chat.continues_assistant_turn is prefill
        assert chat.supports_grammar is (kind != "other")
        # Decoding as in-process: llama-cpp-python's server would penalise repeats (1.1).
        extra = chat._request(FRANCE, GenerationOptions()).get("extra_body")
        assert extra == (None if kind == "other" else {"repeat_penalty": 1.0})


def test_grammar_is_refused_for_non_llama_cpp_servers() -> None:
    chat = OpenAIChat(base_url="http://127.0.0.1:9/v1", model="m", server_kind="openai")
    with pytest.raises(LLMError, match=r"not a llama\.cpp server"):
        chat.run(FRANCE, GenerationOptions(grammar='root ::= "x"'))


def test_a_dead_endpoint_is_a_clear_error(closed_port: int) -> None:
    port = closed_port
    chat = OpenAIChat(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0, timeout=5)

    started = time.monotonic()
    with pytest.raises(LLMError, match=rf"cannot reach http://127\.0\.0\.1:{port}/v1"):
        chat.run(FRANCE)
    assert time.monotonic() - started < 5


def test_reported_cached_tokens_are_not_evaluated() -> None:
    chat = OpenAIChat(base_url="http://127.0.0.1:9/v1", model="m")
    reported = SimpleNamespace(
        prompt_tokens=1200,
        completion_tokens=30,
        prompt_tokens_details=SimpleNamespace(cached_tokens=1100),
    )
    usage = chat._usage(FRANCE, ["x"] * 30, reported, CallTimer())

    assert (usage.prompt_tokens, usage.prompt_tokens_evaluated) == (1200, 100)
    assert usage.completion_tokens == 30


def test_api_key_defaults_for_local_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # flowsettings passes None when RAGLOOM_OPENAI_API_KEY is unset.
    assert OpenAIChat(model="m")._client().api_key == "not-needed"
    assert OpenAIChat(model="m", api_key=None)._client().api_key == "not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert OpenAIChat(model="m", api_key=None)._client().api_key == "sk-env"
    assert OpenAIChat(model="m", api_key="sk-given")._client().api_key == "sk-given"
