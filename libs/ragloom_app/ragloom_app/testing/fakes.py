"""Small stand-ins for the heavy parts, so a plugin's contract tests run in a second.

:class:`ReplayLLM` (from :mod:`ragloom.llms.replay`) replies with given texts,
:class:`HashEmbeddings` embeds by hashing words, :class:`StaticRetriever` searches a few
given passages by shared words. None of them downloads or loads a model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Sequence

import numpy as np
from theflow import Param

from ragloom.embeddings import Embeddings
from ragloom.llms.replay import ReplayLLM
from ragloom.retrieval import Retriever
from ragloom.schema import Chunk, RetrievedChunk

__all__ = ["HashEmbeddings", "ReplayLLM", "StaticRetriever"]

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def count_words(text: str) -> int:
    """The tokens of :class:`HashEmbeddings`: the words of ``text``."""
    return len(_words(text))


class HashEmbeddings(Embeddings):
    """Bag-of-words vectors by hashing each word into one of ``size`` dimensions."""

    size: int = Param(64, help="Length of every vector.")

    @property
    def dimension(self) -> int:
        return self.size

    @property
    def max_tokens(self) -> int:
        return 512

    def count_tokens(self, text: str) -> int:
        return count_words(text)

    def token_counter(self) -> Callable[[str], int]:
        """:func:`count_words`, which pickles (the component itself does not)."""
        return count_words

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.size), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _words(text):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vectors[row, int.from_bytes(digest, "little") % self.size] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0  # an empty text stays the zero vector
        return vectors / norms


class StaticRetriever(Retriever):
    """Searches the given ``passages`` (of a source named ``source``) by shared words."""

    passages: list[str] = Param(default_callback=lambda _: [], help="The passages to search.")
    source: str = Param("sample.md", help="The source file name of every passage.")

    default_name = "static"

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        wanted = set(_words(query))
        found = []
        offset = 0
        for position, text in enumerate(self.passages):
            chunk = Chunk(
                f"static-{position}", text, "static", self.source, None, offset, offset + len(text)
            )
            offset += len(text) + 1
            if source_ids is not None and chunk.source_id not in source_ids:
                continue
            score = len(wanted & set(_words(text))) / (len(wanted) or 1)
            if score > 0:
                found.append(RetrievedChunk(chunk, score, {self.name: score}))
        found.sort(key=lambda hit: -hit.score)
        return found[: self.resolve_k(top_k)]
