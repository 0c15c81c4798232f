"""Plain data passed between components: pages of a file, chunks and retrieved chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Chunk", "Page", "RetrievedChunk"]


@dataclass(frozen=True)
class Page:
    """Text read from one page of a file (``number`` is 1-based; ``None`` for unpaged formats)."""

    text: str
    number: int | None = None


@dataclass(frozen=True)
class Chunk:
    """A piece of a source file small enough to embed, with where it came from.

    ``start`` and ``end`` are character offsets into the text of ``page`` (or of the whole
    file for unpaged formats), so a citation can point at the exact span.
    """

    id: str
    text: str
    source_id: str
    source_name: str
    page: int | None = None
    start: int = 0
    end: int = 0

    def metadata(self) -> dict[str, Any]:
        """Flat metadata for stores that keep scalars only (Chroma); ``page`` 0 means none."""
        return {
            "source_id": self.source_id,
            "source_name": self.source_name,
            "page": self.page or 0,
            "start": self.start,
            "end": self.end,
        }

    @classmethod
    def from_metadata(cls, chunk_id: str, text: str, metadata: dict[str, Any]) -> Chunk:
        """Rebuild a chunk from :meth:`metadata` as a store returns it."""
        return cls(
            id=chunk_id,
            text=text,
            source_id=str(metadata.get("source_id", "")),
            source_name=str(metadata.get("source_name", "")),
            page=int(metadata.get("page") or 0) or None,
            start=int(metadata.get("start", 0)),
            end=int(metadata.get("end", 0)),
        )


@dataclass
class RetrievedChunk:
    """A chunk found by retrieval: its fused score and each retriever's own score."""

    chunk: Chunk
    score: float
    found_by: dict[str, float] = field(default_factory=dict)
