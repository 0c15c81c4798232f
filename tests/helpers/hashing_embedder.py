"""A deterministic bag-of-words embedder for retrieval tests over real stores."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

__all__ = ["DIM", "HashingEmbedder"]

DIM = 64


class HashingEmbedder:
    """A deterministic bag-of-words embedder: each word adds a hashed ±1 at one dimension.

    Texts sharing words get a high cosine similarity, which is all these tests need.
    """

    def embed(self, text: str) -> np.ndarray:
        vector = np.zeros(DIM, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vector[digest[0] % DIM] += 1.0 if digest[1] % 2 else -1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.embed(t) for t in texts])
