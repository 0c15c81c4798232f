"""Embeddings from an OpenAI-compatible endpoint: batches, order, length 1, and clear
errors for an endpoint that fails, stalls or changes its answers.

Against the labelled stand-in endpoint (``ragloom_app.testing.openai_standin``), whose vectors
are made from the texts' bytes: tests of the client, not of retrieval quality. The last
test indexes and searches a file in the app through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragloom.embeddings import EmbeddingsError, OpenAIEmbeddings
from ragloom.embeddings.openai_compat import estimate_tokens
from ragloom_app.testing.openai_standin import FakeEndpoint, fake_openai


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with fake_openai() as served:
        yield served


def _model(endpoint: FakeEndpoint, **settings: object) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(base_url=endpoint.url, model="fake-embed", **settings)


def test_texts_go_in_batches_and_come_back_in_order_at_length_one(
    endpoint: FakeEndpoint,
) -> None:
    model = _model(endpoint, batch_size=2)
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    vectors = model.embed_documents(texts)
    assert vectors.shape == (5, 8) and vectors.dtype == np.float32
    assert endpoint.batches == [2, 2, 1]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # The server lists each batch last first: every vector is still its own text's.
    assert np.allclose(vectors[2], model.embed_query("gamma"))
    assert model.dimension == 8 and len(endpoint.batches) == 4  # known: not asked again


def test_the_dimension_is_asked_once_when_nothing_was_embedded(endpoint: FakeEndpoint) -> None:
    endpoint.dimension = 12
    model = _model(endpoint)
    assert model.dimension == 12 and model.dimension == 12
    assert endpoint.requests == 1


def test_a_model_that_changes_its_dimension_is_refused(endpoint: FakeEndpoint) -> None:
    model = _model(endpoint)
    model.embed_documents(["one"])
    endpoint.dimension = 16
    with pytest.raises(EmbeddingsError, match="16-dimensional vectors, not 8 as before"):
        model.embed_documents(["two"])


def test_a_transient_failure_is_retried(endpoint: FakeEndpoint) -> None:
    endpoint.failures, endpoint.failure_status = 1, 503
    assert _model(endpoint).embed_documents(["one"]).shape == (1, 8)
    assert endpoint.requests == 2


def test_a_refusal_is_an_error_naming_the_endpoint(endpoint: FakeEndpoint) -> None:
    endpoint.failures, endpoint.failure_status = 3, 400
    with pytest.raises(EmbeddingsError, match=r"127\.0\.0\.1.*answered HTTP 400"):
        _model(endpoint).embed_documents(["one"])
    assert endpoint.requests == 1


def test_a_slow_endpoint_fails_at_its_timeout(endpoint: FakeEndpoint) -> None:
    endpoint.delay = 5.0
    with pytest.raises(EmbeddingsError, match="did not answer within"):
        _model(endpoint, timeout=0.5, max_retries=0).embed_documents(["one"])


def test_tokens_are_estimated_and_the_estimate_pickles() -> None:
    import pickle

    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    model = OpenAIEmbeddings(model="x")
    assert pickle.loads(pickle.dumps(model.token_counter()))("abcdefgh") == 2


def test_the_app_indexes_and_searches_through_an_embeddings_endpoint(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings

    settings = AppSettings(
        data_dir=tmp_path / "data",
        embeddings={
            "remote": {
                "class": "ragloom.embeddings.openai_compat.OpenAIEmbeddings",
                "base_url": endpoint.url,
                "model": "fake-embed",
            }
        },
        default_embedding="remote",
    )
    settings.first_run_docs = None
    app = BaseApp(settings).start()
    document = tmp_path / "reactor.md"
    document.write_text("The Zorblax reactor runs at 451 kelvin.", encoding="utf-8")
    index = app.indices.get("My files")
    (outcome,) = index.get_indexing_pipeline({}).run([document])
    assert outcome.status == "indexed" and endpoint.batches
    (retriever,) = index.get_retriever_pipelines({"retrieval_mode": "vector"})
    (found,) = retriever.run("The Zorblax reactor runs at 451 kelvin.")[:1]
    assert "451 kelvin" in found.chunk.text
