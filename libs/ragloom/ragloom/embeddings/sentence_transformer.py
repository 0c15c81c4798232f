"""Embeddings from a local sentence-transformers model directory (by default the bundled MiniLM).

Nothing is loaded at import: the model loads on first use, once per process for each
``(path, device, backend, precision)``, and is shared by every instance asking for the same
one. Only local files are read (``local_files_only``); no hub is contacted.

Two backends compute the same vectors:

- ``backend="torch"``: sentence-transformers on torch, in ``precision`` ``"fp32"`` or
  ``"bf16"`` (weights cast to bfloat16: about twice as fast on CPUs with AVX512-BF16, cosine
  to fp32 above 0.9998, but several times *slower* on CPUs without it).
- ``backend="onnx"``: the model exported once to ONNX and run by onnxruntime
  (:mod:`ragloom.embeddings.onnx_backend`); fp32, equal to torch fp32 to float rounding,
  faster on the CPUs measured (see docs/performance.md), and it loads without torch; or,
  with ``precision="int8"``, its int8 copy: about twice as fast again, vectors at cosine
  about 0.99 to fp32.

Speed choices: texts are sorted by token length and encoded one batch at a time, so each
batch pads to similar lengths (sentence-transformers itself sorts by characters; sorting by
tokens measured 74 vs 61 chunks/s on mixed lengths). Vectors are always returned as float32
and re-normalised in float32.

Texts longer than :attr:`max_tokens` (special tokens included) are truncated by the model:
only their beginning is embedded. Split documents first (``TokenSplitter``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from theflow import Param

from ragloom.embeddings.base import Embeddings, EmbeddingsError, unit_rows
from ragloom.embeddings.bundled import bundled_model_path
from ragloom.embeddings.token_counter import TokenizerCounter

__all__ = ["Backend", "Precision", "SentenceTransformerEmbeddings"]

logger = logging.getLogger(__name__)

Precision = Literal["fp32", "bf16", "int8"]
_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")
Backend = Literal["torch", "onnx"]
_BACKENDS: tuple[str, ...] = ("torch", "onnx")
# Measured on ~240-token and mixed chunks (benchmarks/embedding_speed.py, 2 cores): torch is
# slower with small batches, onnxruntime faster (4-8 texts: 1.1x on uniform, 1.5x on mixed
# lengths, against 32), likely because a batch's activations then stay in the CPU caches.
_DEFAULT_BATCH = {"torch": 32, "onnx": 8}
ONNX_ENCODES_AT_ONCE = 2
"""Batches one onnx model encodes at once (each on all of onnxruntime's threads): more
measured no faster on 2 cores (16 callers: 1 at a time 2.37 s, 2 2.06 s, 3 2.04 s)."""


@dataclass
class _LoadedModel:
    """A loaded model with what callers need from it, shared across instances."""

    model: Any  # SentenceTransformer (torch) or OnnxEncoder (onnx), imported lazily
    encode: Callable[[list[str]], np.ndarray]  # one batch -> unit float32 vectors
    count_one: Callable[[str], int]
    count_many: Callable[[list[str]], list[int]]
    dimension: int
    max_tokens: int
    tokenizer_json: str | None  # what TokenizerCounter counts with; None: no fast tokenizer
    # Batches encoded at once. Through sentence-transformers, one: HF tokenizers may raise
    # "Already borrowed" when one model encodes in two threads. onnxruntime runs one
    # session in several threads, and our tokenizer is never changed after loading, so
    # the onnx backend lets ONNX_ENCODES_AT_ONCE in: under many small requests (a question,
    # a few sentences) a second batch fills the gaps the first leaves between its
    # operators (13 % more embeddings a second, docs/performance.md).
    encode_slots: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(1))


_MODELS: dict[tuple[str, str, str, str], _LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def _get_model(path: Path, device: str, backend: str, precision: str) -> _LoadedModel:
    key = (str(path.resolve()), device, backend, precision)
    # One lock for all loads: loading is rare, and two threads asking for the same model
    # at startup must not load it twice (about 90 MB and a second each).
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            if backend not in _BACKENDS:
                raise EmbeddingsError(f"unknown backend {backend!r}; use one of {_BACKENDS}")
            if precision not in _PRECISIONS:
                raise EmbeddingsError(f"unknown precision {precision!r}; use one of {_PRECISIONS}")
            if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
                raise EmbeddingsError(f"no sentence-transformers model in {path}")
            if backend == "onnx":
                loaded = _load_onnx(path, device, precision)
            else:
                loaded = _load_model(path, device, precision)
            _MODELS[key] = loaded
        return loaded


def _load_onnx(path: Path, device: str, precision: str) -> _LoadedModel:
    if device != "cpu" or precision not in ("fp32", "int8"):
        raise EmbeddingsError(
            f"the onnx backend runs in fp32 or int8 on the CPU only, not {precision} on {device}"
        )
    from ragloom.embeddings.onnx_backend import load_onnx

    started = time.perf_counter()
    encoder = load_onnx(path, quantized=precision == "int8")
    logger.info(
        "loaded embedding model %s with onnxruntime (%s, %s) in %.1f s",
        path,
        encoder.path.name,
        precision,
        time.perf_counter() - started,
    )
    return _LoadedModel(
        encoder,
        encoder.encode,
        encoder.count_one,
        encoder.count_many,
        encoder.dimension,
        encoder.max_tokens,
        encoder.counter.to_str(),
        threading.Semaphore(ONNX_ENCODES_AT_ONCE),
    )


def _load_model(path: Path, device: str, precision: str) -> _LoadedModel:
    if precision == "int8":
        raise EmbeddingsError("precision int8 is for the onnx backend (backend='onnx')")
    started = time.perf_counter()
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        # transformers draws a "Loading weights" progress bar on stderr; a server log is
        # no place for it. Loads are serialised by _MODELS_LOCK, so the switch is safe.
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            model = SentenceTransformer(str(path), device=device, local_files_only=True)
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        model.eval()
        if precision == "bf16":
            model.to(torch.bfloat16)
    except Exception as exc:
        raise EmbeddingsError(f"cannot load the embedding model in {path}: {exc}") from exc

    dimension = model.get_embedding_dimension()
    max_tokens = model.max_seq_length
    if dimension is None or max_tokens is None:
        raise EmbeddingsError(f"the model in {path} does not state its dimension or length")
    count_one, count_many, tokenizer_json = _token_counters(model.tokenizer)

    def encode(texts: list[str]) -> np.ndarray:
        tensor = model.encode(
            texts, batch_size=len(texts), convert_to_tensor=True, show_progress_bar=False
        )
        # bf16 has no numpy dtype; normalise in float32 so bf16 rounding does not leave
        # the vectors slightly off unit length.
        vectors = tensor.float().cpu().numpy().astype(np.float32, copy=False)
        return unit_rows(vectors)

    logger.info(
        "loaded embedding model %s on %s (%s, %d dims, max %d tokens) in %.1f s",
        path,
        device,
        precision,
        dimension,
        max_tokens,
        time.perf_counter() - started,
    )
    return _LoadedModel(
        model, encode, count_one, count_many, int(dimension), int(max_tokens), tokenizer_json
    )


def _token_counters(
    tokenizer: Any,
) -> tuple[Callable[[str], int], Callable[[list[str]], list[int]], str | None]:
    """Counters of the model's tokens (no special tokens, no truncation), and its JSON."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        import tokenizers

        # A private copy of the Rust tokenizer: three times faster than the HF wrapper, it
        # does not warn about long texts, and changing its truncation cannot affect (or
        # race with) the copy the model encodes with.
        tokenizer_json = backend.to_str()
        fast = tokenizers.Tokenizer.from_str(tokenizer_json)
        fast.no_truncation()
        fast.no_padding()

        def count_one(text: str) -> int:
            return len(fast.encode(text, add_special_tokens=False).ids)

        def count_many(texts: list[str]) -> list[int]:
            return [len(e.ids) for e in fast.encode_batch(texts, add_special_tokens=False)]

        return count_one, count_many, tokenizer_json

    def slow_one(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def slow_many(texts: list[str]) -> list[int]:
        return [slow_one(text) for text in texts]

    return slow_one, slow_many, None


class SentenceTransformerEmbeddings(Embeddings):
    """A sentence-transformers model read from a local directory; see the module docs."""

    model_path: str | Path | None = Param(
        None, help="Model directory; None for the bundled all-MiniLM-L6-v2."
    )
    device: str = Param("cpu", help="torch device, e.g. 'cpu'.")
    batch_size: int | None = Param(
        None, help="Texts per forward pass; None: the backend's best measured (torch 32, onnx 8)."
    )
    backend: Backend = Param(
        "torch", help="'torch' (sentence-transformers) or 'onnx' (onnxruntime, fp32, CPU)."
    )
    precision: Precision = Param(
        "fp32",
        help="'fp32'; torch: 'bf16' (faster on AVX512-BF16 CPUs only); onnx: 'int8' "
        "(about twice as fast, vectors at cosine ~0.99 to fp32).",
    )
    sort_by_tokens: bool = Param(
        True, help="Batch texts of similar token length together (less padding)."
    )

    def _loaded(self) -> _LoadedModel:
        key = (self.model_path, str(self.device), str(self.backend), str(self.precision))
        # count_tokens runs once per sentence while splitting: remember the model here
        # rather than resolving its path and taking the cache lock on every call.
        cached: tuple[tuple[Any, str, str, str], _LoadedModel] | None = getattr(
            self, "_ragloom_loaded", None
        )
        if cached is not None and cached[0] == key:
            return cached[1]
        path = bundled_model_path() if key[0] is None else Path(key[0])
        loaded = _get_model(path, key[1], key[2], key[3])
        self._ragloom_loaded = (key, loaded)
        return loaded

    @property
    def dimension(self) -> int:
        """Length of every vector (384 for the bundled model); loads the model."""
        return self._loaded().dimension

    @property
    def max_tokens(self) -> int:
        """The model's maximum sequence length, including its special tokens; loads the model.

        For the bundled model 256, i.e. 254 tokens as counted by :meth:`count_tokens`.
        """
        return self._loaded().max_tokens

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the model's tokenizer, special tokens excluded."""
        return self._loaded().count_one(text)

    def token_counter(self) -> TokenizerCounter:
        """A picklable counter equal to :meth:`count_tokens` (a :class:`TokenizerCounter`).

        The model loads only when the counter is first used or pickled. A model without a
        fast (Rust) tokenizer counts with :meth:`count_tokens`, in this process only.
        """
        return TokenizerCounter(load=self._tokenizer_json, fallback=self.count_tokens)

    def _tokenizer_json(self) -> str | None:
        return self._loaded().tokenizer_json

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` in their order: float32 ``(n, dimension)``, L2-normalised."""
        items = list(texts)
        loaded = self._loaded()
        if not items:
            return np.empty((0, loaded.dimension), dtype=np.float32)
        chosen = self.batch_size
        if chosen is None:
            chosen = _DEFAULT_BATCH[str(self.backend)]
        batch_size = max(1, int(chosen))
        started = time.perf_counter()
        if self.sort_by_tokens:
            lengths = loaded.count_many(items)
            # Longest first, as sentence-transformers does: a batch too big for memory
            # fails at once rather than at the end.
            order = sorted(range(len(items)), key=lambda i: -lengths[i])
        else:
            order = list(range(len(items)))
        vectors = np.empty((len(items), loaded.dimension), dtype=np.float32)
        for first in range(0, len(order), batch_size):
            picked = order[first : first + batch_size]
            with loaded.encode_slots:
                vectors[picked] = loaded.encode([items[i] for i in picked])
        logger.debug("embedded %d texts in %.2f s", len(items), time.perf_counter() - started)
        return vectors
