"""Turn a file into chunks and write them to a vector store and a full-text store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from theflow import Param

from ragloom.base import BaseComponent
from ragloom.embeddings import Embeddings
from ragloom.loaders import FileReader, read_file
from ragloom.schema import Chunk
from ragloom.splitters import TokenSplitter
from ragloom.stores import FullTextStore, VectorStore

__all__ = ["FileIngestor"]


class FileIngestor(BaseComponent):
    """Read, split, embed and store one file. Reading errors are :class:`LoaderError`.

    :meth:`chunk` and :meth:`store` are separate so a caller can record the chunks (or
    refuse the file) before anything reaches the stores.
    """

    splitter: TokenSplitter = Param(help="Splits pages into token-sized chunks.")
    embeddings: Embeddings = Param(help="Embeds chunks for the vector store.")
    vector_store: VectorStore = Param(help="Where chunk vectors go.")
    fulltext_store: FullTextStore = Param(help="Where chunk terms go.")
    readers: Mapping[str, FileReader] | None = Param(
        None, help="Readers by extension; None for the defaults."
    )

    def chunk(self, path: Path, source_id: str, source_name: str) -> list[Chunk]:
        """Read ``path`` and split it; raises ``LoaderError`` for a file it cannot read."""
        pages = read_file(path, self.readers)
        return self.splitter(pages, source_id=source_id, source_name=source_name)

    def store(self, chunks: Sequence[Chunk]) -> None:
        """Embed ``chunks`` and write them to both stores."""
        if not chunks:
            return
        vectors = self.embeddings.embed_documents([c.text for c in chunks])
        self.vector_store.add(chunks, vectors)
        self.fulltext_store.add(chunks)

    def run(self, path: Path, source_id: str, source_name: str) -> list[Chunk]:
        """Read, split, embed and store a file; returns its chunks."""
        chunks = self.chunk(path, source_id, source_name)
        self.store(chunks)
        return chunks
