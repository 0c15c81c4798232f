"""SentenceTransformerEmbeddings with the real bundled MiniLM, offline."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragloom.embeddings import (
    EmbeddingsError,
    SentenceTransformerEmbeddings,
    bundled_model_path,
)
from ragloom.embeddings.bundled import (
    BUNDLED_MODEL_DIMENSION,
    BUNDLED_MODEL_MAX_TOKENS,
    BUNDLED_MODEL_SHA256,
)
from ragloom.schema import Page
from ragloom.splitters import TokenSplitter
from tests.helpers.embedding_texts import SAMPLE_TEXTS
from tests.helpers.outbound import recorded_hosts

TEXTS = SAMPLE_TEXTS


@pytest.fixture(scope="module", autouse=True)
def _offline() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch, recorded_hosts() as hosts:
        patch.setitem(os.environ, "HF_HUB_OFFLINE", "1")
        patch.setitem(os.environ, "HF_HUB_DISABLE_TELEMETRY", "1")
        yield
    assert not hosts, hosts


@pytest.fixture(scope="module")
def fp32() -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings()


@pytest.fixture(scope="module")
def bf16() -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings(precision="bf16")


def _model(embeddings: SentenceTransformerEmbeddings):
    return embeddings._loaded().model


def test_shape_dtype_and_norm(fp32: SentenceTransformerEmbeddings) -> None:
    assert fp32.dimension == BUNDLED_MODEL_DIMENSION == 384
    assert fp32.max_tokens == BUNDLED_MODEL_MAX_TOKENS == 256
    vectors = fp32.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert fp32.embed_documents([]).shape == (0, 384)


def test_query_and_run(fp32: SentenceTransformerEmbeddings) -> None:
    query = fp32.embed_query("Where is the cat?")
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(
        query, fp32.embed_documents(["Where is the cat?"])[0], rtol=0, atol=1e-6
    )
    np.testing.assert_allclose(fp32(TEXTS[:3]), fp32.embed_documents(TEXTS[:3]), atol=1e-6)


def test_similar_sentence_scores_higher(fp32: SentenceTransformerEmbeddings) -> None:
    anchor, similar, unrelated = fp32.embed_documents(
        [
            "A cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Interest rates rose again this quarter.",
        ]
    )
    assert float(anchor @ similar) > float(anchor @ unrelated) + 0.3


def test_sorting_by_tokens_keeps_the_order(fp32: SentenceTransformerEmbeddings) -> None:
    sorted_batches = SentenceTransformerEmbeddings(batch_size=3, sort_by_tokens=True)
    one_by_one = np.stack([fp32.embed_documents([t])[0] for t in TEXTS])
    vectors = sorted_batches.embed_documents(TEXTS)
    # Same model, different padding per batch: equal up to float noise, row by row.
    cosines = np.sum(vectors * one_by_one, axis=1)
    assert cosines.min() > 0.9999, cosines
    unsorted = SentenceTransformerEmbeddings(batch_size=3, sort_by_tokens=False)
    assert np.sum(unsorted.embed_documents(TEXTS) * one_by_one, axis=1).min() > 0.9999


def test_bf16_is_close_to_fp32(
    fp32: SentenceTransformerEmbeddings, bf16: SentenceTransformerEmbeddings
) -> None:
    import torch

    assert next(_model(bf16).parameters()).dtype == torch.bfloat16
    assert next(_model(fp32).parameters()).dtype == torch.float32
    low = bf16.embed_documents(TEXTS)
    assert low.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(low, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(low * fp32.embed_documents(TEXTS), axis=1)
    assert cosines.min() >= 0.999, cosines


def test_count_tokens_matches_the_model_tokenizer(fp32: SentenceTransformerEmbeddings) -> None:
    tokenizer = _model(fp32).tokenizer
    long_text = " ".join(["tokenization"] * 400)  # far past 256: counts are not truncated
    for text in [*TEXTS, long_text, "  leading and trailing  ", "\n\n"]:
        expected = len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
        assert fp32.count_tokens(text) == expected, text
    assert fp32.count_tokens(long_text) > 256
    assert fp32.count_tokens("") == 0


def test_long_texts_are_truncated(fp32: SentenceTransformerEmbeddings) -> None:
    start = " ".join(f"word{i}" for i in range(300))  # well past 256 tokens
    a, b = fp32.embed_documents([start + " apples", start + " volcanoes erupt"])
    assert float(a @ b) > 0.99999


def test_instances_share_one_loaded_model(fp32: SentenceTransformerEmbeddings) -> None:
    other = SentenceTransformerEmbeddings(batch_size=8)
    explicit = SentenceTransformerEmbeddings(model_path=str(bundled_model_path()))
    assert _model(other) is _model(fp32)
    assert _model(explicit) is _model(fp32)


def test_loading_is_lazy_and_errors_are_clear(tmp_path: Path) -> None:
    missing = SentenceTransformerEmbeddings(model_path=tmp_path / "nothing-here")
    with pytest.raises(EmbeddingsError, match="no sentence-transformers model"):
        missing.count_tokens("hello")
    wrong = SentenceTransformerEmbeddings(precision="fp8")
    with pytest.raises(EmbeddingsError, match="unknown precision"):
        wrong.embed_query("hello")


def test_splitter_with_the_model_tokenizer(fp32: SentenceTransformerEmbeddings) -> None:
    rng = random.Random(3)
    words = "offline document question answer 中文 naïve café ½ e.g. don't (x) 3.14".split()  # noqa: SIM905
    text = "\n\n".join(
        " ".join(
            " ".join(rng.choice(words) for _ in range(rng.randint(3, 90))) + "."
            for _ in range(rng.randint(1, 6))
        )
        for _ in range(25)
    )
    splitter = TokenSplitter(chunk_size=64, chunk_overlap=12, tokenizer=fp32.count_tokens)
    chunks = splitter([Page(text, number=1)], source_id="s", source_name="f")
    assert len(chunks) > 10
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert fp32.count_tokens(chunk.text) <= 64


def test_bundled_files_are_the_pinned_ones() -> None:
    path = bundled_model_path()
    for name, digest in BUNDLED_MODEL_SHA256.items():
        assert hashlib.sha256((path / name).read_bytes()).hexdigest() == digest, name
