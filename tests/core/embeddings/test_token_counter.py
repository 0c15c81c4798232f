"""TokenizerCounter: the bundled model's token counts, in this process and in a worker."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.embeddings import SentenceTransformerEmbeddings, TokenizerCounter, token_counter
from ragloom.sandbox import Sandbox, SandboxLimits

TEXTS = [
    "",
    "A cat sits on the mat.",
    "短い日本語の文です。中文文本测试。",
    "café naïve résumé — Ünïcödé ½ ﬁ 😀",
    "aGVsbG8gd29ybGQ" * 300,
    " ".join(["retrieval augmented generation splits documents into chunks"] * 40),
]


@pytest.fixture(scope="module")
def embeddings() -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings()


def count_all(counter: TokenizerCounter, texts: list[str]) -> list[int]:
    return [counter(text) for text in texts]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox("token-counter-test", SandboxLimits(workers=1))
    yield box
    box.close()


def test_creating_a_counter_loads_nothing() -> None:
    counter = SentenceTransformerEmbeddings().token_counter()
    assert repr(counter) == "TokenizerCounter(not loaded)"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=400))
def test_counts_equal_the_models_own(embeddings: SentenceTransformerEmbeddings, text: str) -> None:
    assert embeddings.token_counter()(text) == embeddings.count_tokens(text)


def test_a_pickled_counter_counts_the_same_in_a_worker(
    embeddings: SentenceTransformerEmbeddings, sandbox: Sandbox
) -> None:
    counter = embeddings.token_counter()
    expected = [embeddings.count_tokens(text) for text in TEXTS]
    assert pickle.loads(pickle.dumps(counter))("A cat sits on the mat.") == expected[1]
    assert sandbox.run(count_all, counter, TEXTS, timeout=60) == expected
    # Only the JSON travels: the model object stays here.
    assert len(pickle.dumps(counter)) < 2 << 20


def test_the_json_or_a_loader_is_required() -> None:
    with pytest.raises(ValueError, match="not both"):
        TokenizerCounter()
    with pytest.raises(ValueError, match="not both"):
        TokenizerCounter("{}", load=lambda: "{}")


def test_a_model_without_a_fast_tokenizer_counts_in_this_process_only() -> None:
    counter = TokenizerCounter(load=lambda: None, fallback=lambda text: len(text.split()))
    assert counter("three little words") == 3
    with pytest.raises(TypeError, match="counts only in this process"):
        pickle.dumps(counter)


def test_copies_sent_to_a_worker_find_their_tokenizer_without_hashing_it_again(
    embeddings: SentenceTransformerEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers sandbox gets a counter with every file: the JSON's digest travels
    with it, so the worker looks its built tokenizer up instead of hashing 0.5 MB."""
    blob = pickle.dumps(embeddings.token_counter())
    hashed: list[bytes] = []
    monkeypatch.setattr(token_counter.hashlib, "sha256", lambda data: hashed.append(data))
    copies = [pickle.loads(blob) for _ in range(3)]
    assert [copy("A cat sits on the mat.") for copy in copies] == [7] * 3
    assert hashed == []
