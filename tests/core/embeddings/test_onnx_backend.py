"""The ONNX backend of SentenceTransformerEmbeddings: same vectors as torch fp32, cached export."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragloom.embeddings import (
    EmbeddingsError,
    SentenceTransformerEmbeddings,
    bundled_model_path,
    onnx_backend,
)
from ragloom.embeddings import sentence_transformer as st_module
from ragloom.embeddings.bundled import BUNDLED_MODEL_SHA256
from tests.helpers.embedding_texts import SAMPLE_TEXTS
from tests.helpers.outbound import recorded_hosts

TEXTS = SAMPLE_TEXTS


def _forget_onnx_models() -> None:
    # Loaded models are shared per process; a test with its own cache must load afresh.
    for key in [k for k in st_module._MODELS if k[2] == "onnx"]:
        del st_module._MODELS[key]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A model cache of this module's own, exported into once, with no network."""
    folder = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as patch, recorded_hosts() as hosts:
        patch.setenv("RAGLOOM_MODEL_CACHE", str(folder))
        patch.setenv("HF_HUB_OFFLINE", "1")
        _forget_onnx_models()
        try:
            yield folder
        finally:
            _forget_onnx_models()
    assert not hosts, hosts


@pytest.fixture(scope="module")
def onnx(cache_dir: Path) -> SentenceTransformerEmbeddings:
    embeddings = SentenceTransformerEmbeddings(backend="onnx")
    embeddings.embed_query("load once")
    return embeddings


@pytest.fixture(scope="module")
def fp32() -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings(backend="torch", precision="fp32")


def test_close_to_torch_fp32(
    onnx: SentenceTransformerEmbeddings, fp32: SentenceTransformerEmbeddings
) -> None:
    assert onnx.dimension == fp32.dimension == 384
    assert onnx.max_tokens == fp32.max_tokens == 256
    cosines = np.sum(onnx.embed_documents(TEXTS) * fp32.embed_documents(TEXTS), axis=1)
    assert cosines.min() >= 0.999, cosines
    # In fact equal up to float rounding: same fp32 arithmetic, another kernel library.
    assert cosines.min() >= 0.99999, cosines


def test_int8_is_a_cached_copy_close_to_fp32(
    onnx: SentenceTransformerEmbeddings, cache_dir: Path
) -> None:
    int8 = SentenceTransformerEmbeddings(backend="onnx", precision="int8")
    vectors = int8.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(vectors * onnx.embed_documents(TEXTS), axis=1)
    # Close, not equal: judged by retrieval recall (docs/performance.md), not this bar.
    assert 0.95 <= cosines.min() < 0.99999, cosines
    made = onnx_backend.onnx_model_file(bundled_model_path(), cache_dir, quantized=True)
    assert made.is_file() and made != onnx_backend.onnx_model_file(bundled_model_path(), cache_dir)
    assert (
        made.stat().st_size
        < onnx_backend.onnx_model_file(bundled_model_path(), cache_dir).stat().st_size / 2
    )


def test_an_int8_copy_that_drifts_is_refused(
    onnx: SentenceTransformerEmbeddings, cache_dir: Path, tmp_path: Path
) -> None:
    # ``onnx`` exported the fp32 graph into this module's cache.
    fp32_file = onnx_backend.onnx_model_file(bundled_model_path(), cache_dir)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(onnx_backend, "MIN_INT8_COSINE", 0.99999)
        with pytest.raises(EmbeddingsError, match="drifts from fp32"):
            onnx_backend.quantize_onnx(fp32_file, tmp_path / "int8.onnx")
    assert not (tmp_path / "int8.onnx").exists()


def test_shape_dtype_and_norm(onnx: SentenceTransformerEmbeddings) -> None:
    vectors = onnx.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx.embed_documents([]).shape == (0, 384)
    query = onnx.embed_query("Where is the cat?")
    assert query.shape == (384,) and query.dtype == np.float32


def test_order_is_kept_whatever_the_batching(onnx: SentenceTransformerEmbeddings) -> None:
    one_by_one = np.stack([onnx.embed_documents([t])[0] for t in TEXTS])
    for sort in (True, False):
        batched = SentenceTransformerEmbeddings(backend="onnx", batch_size=3, sort_by_tokens=sort)
        cosines = np.sum(batched.embed_documents(TEXTS) * one_by_one, axis=1)
        assert cosines.min() > 0.99999, (sort, cosines)
    reversed_vectors = onnx.embed_documents(TEXTS[::-1])
    np.testing.assert_allclose(reversed_vectors[::-1], onnx.embed_documents(TEXTS), atol=1e-5)


def test_threads_embed_at_once_up_to_the_bound_with_the_same_vectors(
    onnx: SentenceTransformerEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers embed their questions in threads of their own: the onnx model takes
    ONNX_ENCODES_AT_ONCE batches together (its tokenizer is shared, never changed), not
    more, and each thread gets its own texts' vectors."""
    alone = onnx.embed_documents(TEXTS)
    loaded = onnx._loaded()
    encode, running, most = loaded.encode, [0], [0]
    count = threading.Lock()
    both_in = threading.Barrier(st_module.ONNX_ENCODES_AT_ONCE, timeout=30)

    def counted(texts: list[str]) -> np.ndarray:
        with count:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            both_in.wait()  # proves that the bound's number of batches run together
            return encode(texts)
        finally:
            with count:
                running[0] -= 1

    monkeypatch.setattr(loaded, "encode", counted)
    results: dict[int, np.ndarray] = {}
    raised: list[BaseException] = []

    def embed(k: int) -> None:
        try:
            results[k] = onnx.embed_documents([TEXTS[k % len(TEXTS)]])
        except BaseException as exc:  # a broken barrier, say: shown by the test, not lost
            raised.append(exc)

    # A multiple of the bound, so that no thread waits at the barrier for a partner.
    calls = 3 * st_module.ONNX_ENCODES_AT_ONCE
    threads = [threading.Thread(target=embed, args=(k,)) for k in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not raised and not any(thread.is_alive() for thread in threads), raised
    assert most[0] == st_module.ONNX_ENCODES_AT_ONCE
    assert sorted(results) == list(range(calls))
    for k, vectors in results.items():
        np.testing.assert_allclose(vectors[0], alone[k % len(TEXTS)], atol=1e-5)


def test_long_texts_are_truncated_like_torch(onnx: SentenceTransformerEmbeddings) -> None:
    start = " ".join(f"word{i}" for i in range(300))  # well past 256 tokens
    a, b = onnx.embed_documents([start + " apples", start + " volcanoes erupt"])
    assert float(a @ b) > 0.99999


def test_count_tokens_matches_torch(
    onnx: SentenceTransformerEmbeddings, fp32: SentenceTransformerEmbeddings
) -> None:
    long_text = " ".join(["tokenization"] * 400)
    for text in [*TEXTS, long_text, "  leading and trailing  ", "\n\n"]:
        assert onnx.count_tokens(text) == fp32.count_tokens(text), text


def test_export_is_cached_by_weights_hash(
    onnx: SentenceTransformerEmbeddings, cache_dir: Path
) -> None:
    # The int8 copy, if a test made it, lies beside it under the same key.
    files = sorted(f for f in (cache_dir / "embeddings").iterdir() if "-int8" not in f.name)
    digest = BUNDLED_MODEL_SHA256["model.safetensors"]
    # One finished file, named by the weights' sha256, and no temporary leftovers.
    assert [f.name.startswith(digest[:32]) for f in files] == [True], files
    assert files[0].suffix == ".onnx"
    assert onnx._loaded().model.path == files[0]


def test_cache_is_reused_without_exporting(
    onnx: SentenceTransformerEmbeddings, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = onnx._loaded().model.path
    before = cached.stat().st_mtime_ns

    def no_export(*args: object, **kwargs: object) -> Path:
        raise AssertionError("exported again although the cache holds the model")

    monkeypatch.setattr(onnx_backend, "export_onnx", no_export)
    encoder = onnx_backend.load_onnx(bundled_model_path())
    assert encoder.path == cached
    assert cached.stat().st_mtime_ns == before
    np.testing.assert_allclose(
        encoder.encode(["A cat."]), onnx.embed_documents(["A cat."]), atol=1e-6
    )


def test_a_cached_model_loads_without_torch(
    onnx: SentenceTransformerEmbeddings, cache_dir: Path
) -> None:
    code = (
        "import sys\n"
        "from ragloom.embeddings import SentenceTransformerEmbeddings\n"
        "v = SentenceTransformerEmbeddings(backend='onnx').embed_query('a cat')\n"
        "assert v.shape == (384,)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    env = {**os.environ, "RAGLOOM_MODEL_CACHE": str(cache_dir), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr


def test_settings_errors_are_clear(cache_dir: Path) -> None:
    with pytest.raises(EmbeddingsError, match="fp32 or int8 on the CPU only"):
        SentenceTransformerEmbeddings(backend="onnx", precision="bf16").embed_query("x")
    with pytest.raises(EmbeddingsError, match="int8 is for the onnx backend"):
        SentenceTransformerEmbeddings(backend="torch", precision="int8").embed_query("x")
    with pytest.raises(EmbeddingsError, match="unknown backend"):
        SentenceTransformerEmbeddings(backend="tensorflow").embed_query("x")


def test_models_without_mean_pooling_are_refused(tmp_path: Path) -> None:
    source = bundled_model_path()
    model = tmp_path / "cls-model"
    shutil.copytree(source, model, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    config = model / "1_Pooling" / "config.json"
    pooling = json.loads(config.read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    config.write_text(json.dumps(pooling))
    with pytest.raises(EmbeddingsError, match="mean pooling only"):
        SentenceTransformerEmbeddings(model_path=model, backend="onnx").embed_query("x")
