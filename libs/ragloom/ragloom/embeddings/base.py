"""The interface every embedding model in Ragloom implements."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

from ragloom.base import BaseComponent

__all__ = ["Embeddings", "EmbeddingsError", "unit_rows"]


class EmbeddingsError(RuntimeError):
    """An embedding model could not be loaded or run."""


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (one a row) scaled to length 1; an all-zero row stays zero."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = vectors / np.maximum(norms, 1e-12)
    return unit


class Embeddings(BaseComponent):
    """Turns texts into unit-length float32 vectors, so a dot product is a cosine.

    Calling the component (``run``) embeds documents. ``count_tokens`` and ``max_tokens``
    let a splitter size chunks with the model's own tokenizer.
    """

    @property
    @abstractmethod
    def dimension(self) -> int:
        """Length of every vector."""

    @property
    @abstractmethod
    def max_tokens(self) -> int:
        """The model's maximum sequence length in tokens; longer texts are truncated."""

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``: float32, shape ``(len(texts), dimension)``, L2-normalised."""

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query: float32, shape ``(dimension,)``, L2-normalised."""
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens the model's tokenizer makes of ``text``, special tokens excluded."""

    def token_counter(self) -> Callable[[str], int]:
        """:meth:`count_tokens` as an object that can be pickled to a worker process.

        Files are chunked in the readers sandbox (:mod:`ragloom.sandbox`), which needs the
        counter there. The default is the bound :meth:`count_tokens`, which crosses only if
        the model object pickles; a model that does not should return a small counter
        (e.g. :class:`~ragloom.embeddings.token_counter.TokenizerCounter`), or its files
        are chunked in the app process instead.
        """
        return self.count_tokens

    def run(self, texts: Sequence[str]) -> np.ndarray:
        """Same as :meth:`embed_documents`."""
        return self.embed_documents(texts)
