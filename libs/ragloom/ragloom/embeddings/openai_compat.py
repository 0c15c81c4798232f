"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama,
a llama.cpp server started with embeddings on, Text Embeddings Inference...).

Texts go in batches of ``batch_size``; the vectors come back in the texts' order (by each
item's ``index``, whatever order the server lists them in), as float32 scaled to length 1.
The dimension is the first answer's, and every later answer must match it. As for chat
endpoints, a request has a ``timeout`` and the answers that mean "try again" (408, 409,
429, 5xx) and connection errors are retried ``max_retries`` times with backoff by the
``openai`` package; any other failure raises :class:`EmbeddingsError` naming the
endpoint.

An endpoint does not say how it tokenizes: chunks are sized by an estimate of 4
characters a token (:func:`estimate_tokens`) against ``max_tokens``, which should be the
model's own limit (the server truncates or refuses longer texts).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from theflow import Param

from ragloom.embeddings.base import Embeddings, EmbeddingsError, unit_rows

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIEmbeddings", "estimate_tokens"]

logger = logging.getLogger(__name__)

_CHARS_PER_TOKEN = 4
_DIMENSION_LOCK = threading.Lock()  # the first answer sets an object's dimension


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` as an estimate: 4 characters a token (at least 1 for any text)."""
    return 0 if not text else max(1, -(-len(text) // _CHARS_PER_TOKEN))


class OpenAIEmbeddings(Embeddings):
    """An embedding model behind an OpenAI-compatible endpoint, used through ``openai``."""

    base_url: str | None = Param(
        None, help="Endpoint, e.g. http://127.0.0.1:8000/v1 (None: the openai package default)."
    )
    api_key: str | None = Param(
        None, help="API key (None: env OPENAI_API_KEY, else a placeholder local servers accept)."
    )
    model: str = Param(help="The embedding model the endpoint serves.")
    timeout: float = Param(60.0, help="Seconds before a request is abandoned.")
    max_retries: int = Param(
        2, help="Retries, with backoff, on connection errors and 408/409/429/5xx answers."
    )
    batch_size: int = Param(64, help="Texts per request.")
    model_max_tokens: int = Param(
        512, help="The model's longest input in tokens (chunks are sized against it)."
    )

    @property
    def dimension(self) -> int:
        """Length of every vector: asked once, by embedding a short text, if not known."""
        known: int | None = getattr(self, "_dimension", None)
        if known is None:
            known = int(self.embed_documents(["dimension"]).shape[1])
        return known

    @property
    def max_tokens(self) -> int:
        """``model_max_tokens``: the endpoint does not say."""
        return int(self.model_max_tokens)

    def count_tokens(self, text: str) -> int:
        """An estimate (:func:`estimate_tokens`): the endpoint's tokenizer is not reachable."""
        return estimate_tokens(text)

    def token_counter(self) -> Callable[[str], int]:
        """The estimate, a plain function (it pickles to the readers sandbox)."""
        return estimate_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, in their order: float32, L2-normalised."""
        if self.batch_size < 1:
            raise EmbeddingsError(f"batch_size must be at least 1, not {self.batch_size}")
        texts = list(texts)
        if not texts:
            return np.zeros((0, getattr(self, "_dimension", 0) or 0), dtype=np.float32)
        batches = [
            self._batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return unit_rows(np.concatenate(batches).astype(np.float32))

    def _batch(self, texts: list[str]) -> np.ndarray:
        with self._translated_errors():
            response = self._client().embeddings.create(model=self.model, input=texts)
        items = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(len(texts))):
            raise EmbeddingsError(
                f"{self._endpoint()} answered {len(items)} vectors for {len(texts)} texts"
            )
        vectors = np.asarray([item.embedding for item in items], dtype=np.float32)
        if vectors.ndim != 2 or not np.isfinite(vectors).all():
            raise EmbeddingsError(f"{self._endpoint()} answered vectors that are not numbers")
        with _DIMENSION_LOCK:
            known = getattr(self, "_dimension", None)
            if known is None:
                self._dimension = int(vectors.shape[1])
            elif vectors.shape[1] != known:
                raise EmbeddingsError(
                    f"{self._endpoint()} answered {vectors.shape[1]}-dimensional vectors, "
                    f"not {known} as before: is it serving another model?"
                )
        return vectors

    def _endpoint(self) -> str:
        return str(self._client().base_url)

    def _client(self) -> openai.OpenAI:
        client = getattr(self, "_openai_client", None)
        if client is None:
            import openai

            client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
            self._openai_client = client
        return client

    @contextlib.contextmanager
    def _translated_errors(self) -> Iterator[None]:
        """Turn ``openai`` exceptions into :class:`EmbeddingsError` naming the endpoint."""
        import openai

        endpoint = self._endpoint()
        try:
            yield
        except openai.APIStatusError as exc:
            raise EmbeddingsError(
                f"{endpoint} answered HTTP {exc.status_code}: {exc.message}"
            ) from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingsError(f"{endpoint} did not answer within {self.timeout} s") from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingsError(f"cannot reach {endpoint}: {exc.message}") from exc
        except openai.OpenAIError as exc:
            raise EmbeddingsError(f"{endpoint} failed: {exc}") from exc
