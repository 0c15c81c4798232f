"""The two store interfaces retrieval is written against: vectors and full text.

Both keep :class:`~ragloom.schema.Chunk` objects keyed by ``Chunk.id`` and can forget one
source file at a time, so re-indexing a file is ``delete_source`` then ``add``. Scores
returned by ``query`` are "higher is better" in both, but on different scales (cosine
similarity vs. BM25), which is why hybrid retrieval fuses ranks rather than scores.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Sequence
from typing import Protocol

import numpy as np

from ragloom.schema import Chunk

__all__ = ["ChunkLookup", "FullTextStore", "StoreUnavailableError", "VectorStore"]


class StoreUnavailableError(RuntimeError):
    """A store's server could not be reached or broke off (it restarts, the network
    failed): nothing was done, and the same call may succeed once it is back. The message
    says which server, in words a user may see."""


class ChunkLookup(Protocol):
    """A store that gives its chunks back by id, texts included (both full-text stores
    do): a vector store can then keep vectors alone and read a hit's text from it."""

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The stored chunks with these ids, by id; unknown ids are left out."""
        ...


class VectorStore(ABC):
    """Chunks with their embeddings, searched by cosine similarity."""

    @abstractmethod
    def add(self, chunks: Sequence[Chunk], embeddings: np.ndarray) -> None:
        """Insert or replace (by ``Chunk.id``) ``chunks``; ``embeddings`` row ``i`` is chunk ``i``.

        Repeated ids in one call: the last occurrence wins.
        """

    @abstractmethod
    def delete(self, ids: Iterable[str]) -> None:
        """Remove the chunks with these ids (unknown ids are ignored)."""

    @abstractmethod
    def delete_source(self, source_id: str) -> None:
        """Remove every chunk of one source file."""

    @abstractmethod
    def query(
        self, embedding: np.ndarray, k: int, source_ids: Collection[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` chunks most similar to ``embedding``, best first, with cosine similarity.

        ``source_ids`` restricts the search to chunks of those sources; an empty collection
        matches nothing, ``None`` matches everything.
        """

    @abstractmethod
    def ids(self) -> set[str]:
        """The ids of every chunk in the store."""

    @abstractmethod
    def count(self) -> int:
        """The number of chunks in the store."""

    @abstractmethod
    def drop(self) -> None:
        """Delete everything this store holds; it is empty (and still usable) afterwards."""

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored embeddings of the chunks with these ids (unknown ids are left out).

        The default returns nothing: a store that cannot give its vectors back lets the
        caller embed the texts again (MMR does), which is slower but gives the same vectors.
        """
        return {}


class FullTextStore(ABC):
    """Chunks searched by keywords (BM25)."""

    @abstractmethod
    def add(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace (by ``Chunk.id``) ``chunks``; the last of repeated ids wins."""

    @abstractmethod
    def delete(self, ids: Iterable[str]) -> None:
        """Remove the chunks with these ids (unknown ids are ignored)."""

    @abstractmethod
    def delete_source(self, source_id: str) -> None:
        """Remove every chunk of one source file."""

    @abstractmethod
    def query(
        self, text: str, k: int, source_ids: Collection[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` best-matching chunks for ``text``, best first, with their BM25 score.

        Only chunks sharing at least one term with ``text`` are returned. ``source_ids``
        restricts the search as in :meth:`VectorStore.query`.
        """

    @abstractmethod
    def ids(self) -> set[str]:
        """The ids of every chunk in the store."""

    @abstractmethod
    def count(self) -> int:
        """The number of chunks in the store."""

    @abstractmethod
    def drop(self) -> None:
        """Delete everything this store holds; it is empty (and still usable) afterwards."""

    def find_terms(
        self, terms: Sequence[str], source_ids: Collection[str] | None = None
    ) -> dict[str, bool | None]:
        """Whether each of ``terms`` occurs in a chunk (of ``source_ids``, if given), as
        this store tokenizes text; a phrase counts when its words occur in order.

        ``None`` for a term the store cannot tell about: the default answers None for
        every term, so a store that does not implement it never makes a term look absent.
        """
        return dict.fromkeys(terms, None)

    def ensure_index(self) -> None:
        """Build now whatever the next query would otherwise build first (default: nothing).

        Worth calling after a batch of changes (the end of an ingestion), so the first
        question after an upload does not wait for the index.
        """
        return None
