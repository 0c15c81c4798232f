"""LlamaCppChat with the real bundled model (greedy, so the answers are reproducible)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from ragloom.llms import (
    ChatMessage,
    GenerationOptions,
    LlamaCppChat,
    LLMBusyError,
    LLMError,
    LLMResult,
)

pytestmark = pytest.mark.llm

FRANCE = [
    ChatMessage("system", "You are a terse assistant."),
    ChatMessage("user", "What is the capital of France? Answer with one word."),
]
COUNT = [ChatMessage("user", "Count from 1 to 20, separated by commas.")]


def test_answers_a_tiny_question(llama_chat: LlamaCppChat) -> None:
    result = llama_chat.run(FRANCE, GenerationOptions(max_tokens=16))

    assert "Paris" in result.text
    assert result.finish_reason == "stop"
    usage = result.usage
    assert usage.prompt_tokens > 10 and usage.completion_tokens >= 1
    assert 0 < usage.prompt_tokens_evaluated <= usage.prompt_tokens
    assert usage.first_token_seconds is not None
    assert 0 < usage.first_token_seconds <= usage.seconds


def test_prompt_tokens_match_llama_cpp(llama_chat: LlamaCppChat) -> None:
    ours = llama_chat.run(FRANCE, GenerationOptions(max_tokens=16))
    raw = llama_chat.llama().create_chat_completion(
        messages=[m.to_dict() for m in FRANCE], max_tokens=16, temperature=0.0
    )
    assert ours.usage.prompt_tokens == raw["usage"]["prompt_tokens"]
    assert ours.text == raw["choices"][0]["message"]["content"]
    # Ours also counts the end-of-turn token the model sampled; llama-cpp-python's does not.
    assert ours.usage.completion_tokens == raw["usage"]["completion_tokens"] + 1


def test_stream_yields_text_pieces_then_the_result(llama_chat: LlamaCppChat) -> None:
    items = list(llama_chat.stream(COUNT, GenerationOptions(max_tokens=30)))

    *pieces, last = items
    assert len(pieces) >= 5
    assert all(item.text and item.result is None for item in pieces)
    assert isinstance(last.result, LLMResult) and last.text == ""
    assert last.result.text == "".join(item.text for item in pieces)
    assert last.result.usage.completion_tokens == 30
    assert last.result.finish_reason == "length"


def test_stop_sequences_end_the_answer(llama_chat: LlamaCppChat) -> None:
    result = llama_chat.run(COUNT, GenerationOptions(max_tokens=80, stop=("7",)))

    assert "6" in result.text and "7" not in result.text
    assert result.finish_reason == "stop"


def test_max_tokens_gives_finish_reason_length(llama_chat: LlamaCppChat) -> None:
    result = llama_chat.run(COUNT, GenerationOptions(max_tokens=4))

    assert result.finish_reason == "length"
    assert result.usage.completion_tokens == 4


def test_json_schema_constrains_the_output(llama_chat: LlamaCppChat) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    }
    messages = [ChatMessage("user", "Name a large city and its population, as JSON.")]
    result = llama_chat.run(messages, GenerationOptions(max_tokens=60, json_schema=schema))

    data = json.loads(result.text)
    assert isinstance(data["city"], str) and isinstance(data["population"], int)


def test_grammar_constrains_the_output(llama_chat: LlamaCppChat) -> None:
    messages = [ChatMessage("user", "Is water wet? Answer yes or no.")]
    grammar = 'root ::= ("yes" | "no") "."'
    result = llama_chat.run(messages, GenerationOptions(max_tokens=8, grammar=grammar))

    assert result.text in {"yes.", "no."}


def test_a_bad_grammar_is_a_clear_error(llama_chat: LlamaCppChat) -> None:
    with pytest.raises(LLMError, match="could not parse the grammar"):
        llama_chat.run(FRANCE, GenerationOptions(grammar="root ::= undefined-rule"))
    # The model is still usable (a null grammar sampler would have crashed the process).
    assert "Paris" in llama_chat.run(FRANCE, GenerationOptions(max_tokens=8)).text


def test_shared_prefix_is_not_evaluated_again(llama_chat: LlamaCppChat) -> None:
    evidence = "\n".join(
        f"[{i}] Warehouse {i} stores {i * 13 % 97} crates of item {chr(65 + i % 26)}."
        for i in range(50)
    )
    system = ChatMessage("system", "Answer from the evidence only, in one sentence.")

    def ask(question: str) -> LLMResult:
        user = ChatMessage("user", f"Evidence:\n{evidence}\nQuestion: {question}")
        return llama_chat.run([system, user], GenerationOptions(max_tokens=24))

    first = ask("How many crates does warehouse 5 store?")
    follow_up = ask("Which item does warehouse 7 store?")

    assert first.usage.prompt_tokens > 600
    assert first.usage.prompt_tokens_evaluated > first.usage.prompt_tokens // 2
    assert follow_up.usage.prompt_tokens_evaluated < follow_up.usage.prompt_tokens // 20
    assert follow_up.usage.first_token_seconds < first.usage.first_token_seconds


def test_continue_assistant_continues_the_open_turn(llama_chat: LlamaCppChat) -> None:
    messages = [
        ChatMessage("user", "Write the letters of the alphabet from A to H, separated by spaces."),
        ChatMessage("assistant", "A B C D"),
    ]
    result = llama_chat.run(messages, GenerationOptions(max_tokens=12, continue_assistant=True))

    assert result.text.startswith(" E F G H"), result.text


def test_continue_assistant_needs_an_assistant_turn_last(llama_chat: LlamaCppChat) -> None:
    with pytest.raises(LLMError, match="assistant"):
        llama_chat.run(FRANCE, GenerationOptions(continue_assistant=True))


def test_a_too_long_prompt_is_a_clear_error(llama_chat: LlamaCppChat) -> None:
    messages = [ChatMessage("user", "lorem ipsum " * 3000)]
    with pytest.raises(LLMError, match=r"prompt has \d+ tokens but the context holds 4096"):
        llama_chat.run(messages)


def test_instances_share_one_loaded_model(llama_chat: LlamaCppChat) -> None:
    other = LlamaCppChat(model_path=llama_chat.model_path)
    assert other.llama() is llama_chat.llama()
    assert LlamaCppChat(model_path=llama_chat.model_path, n_ctx=2048).context_window == 2048


def test_concurrent_calls_are_serialized(llama_chat: LlamaCppChat) -> None:
    results: list[str] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            results.append(llama_chat.run(FRANCE, GenerationOptions(max_tokens=8)).text)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert len(results) == 3 and all("Paris" in text for text in results)


def test_counts_tokens_with_the_model_tokenizer(llama_chat: LlamaCppChat) -> None:
    assert llama_chat.count_tokens("Hello world") == 2
    assert llama_chat.context_window == 4096
    assert llama_chat.name == f"llama.cpp/{llama_chat.model_path.rsplit('/', 1)[-1]}"


def test_a_call_stops_waiting_for_the_busy_model_at_its_wait_until(
    llama_chat: LlamaCppChat,
) -> None:
    other = llama_chat.stream(COUNT)
    next(other)  # generating: it holds the model until it ends
    try:
        started = time.monotonic()
        with pytest.raises(LLMBusyError, match="was answering other questions"):
            llama_chat.run(FRANCE, GenerationOptions(max_tokens=8, wait_until=started + 0.5))
        assert 0.45 < time.monotonic() - started < 5
    finally:
        other.close()
    free = GenerationOptions(max_tokens=8, wait_until=time.monotonic() + 60)
    assert "Paris" in llama_chat.run(FRANCE, free).text


def test_a_calls_seconds_leave_out_its_wait_for_the_model(llama_chat: LlamaCppChat) -> None:
    other = llama_chat.stream(COUNT)
    next(other)
    results: list[LLMResult] = []
    waiting = threading.Thread(
        target=lambda: results.append(llama_chat.run(FRANCE, GenerationOptions(max_tokens=8)))
    )
    started = time.monotonic()
    waiting.start()
    time.sleep(1.5)  # the call waits its turn meanwhile
    other.close()
    waiting.join(timeout=60)
    assert time.monotonic() - started > 1.5
    assert len(results) == 1 and results[0].usage.seconds < time.monotonic() - started - 1.4
